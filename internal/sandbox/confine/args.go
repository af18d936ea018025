package confine

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Args are what the worker asks of the helper: the worker writes them as
// the helper's command line (Argv) and the helper reads them back
// (Parse), so the two sides share one definition of every flag.
type Args struct {
	// Inside says the helper is the first process of a visit's
	// namespaces, started by bubblewrap (the full sandbox); without it
	// the helper applies Landlock, seccomp and an empty capability set
	// to itself and becomes the program (a machine without namespaces),
	// and takes only RW, RO and Command.
	Inside bool
	// Probe makes the helper check its confinement, print ProbeOK and
	// exit instead of running Command (the worker's start probe).
	Probe bool
	// ReadyFD, when positive, is a descriptor the helper writes one
	// byte to once a signal the worker sends it reaches the program.
	ReadyFD int
	// RW and RO are the paths Landlock lets the program write, or read
	// and execute, besides the system paths.
	RW, RO []string
	// Socket is the visit's egress proxy inside the sandbox; Proxy the
	// loopback address where programs that honour the proxy variables
	// reach it; Relays the exact endpoints reached by their own address.
	Socket, Proxy string
	Relays        []Relay
	// ModelSocket is the worker's model relay for the visit inside the
	// sandbox, and Model the loopback address where the agent's CLI
	// reaches it.
	ModelSocket, Model string
	// Mem and Tasks bound the visit's memory and its processes and
	// threads where no cgroup does (0: no bound); Disk bounds what it
	// writes to Watch, the worker's disk as the visit sees it.
	Mem   int64
	Tasks int
	Disk  int64
	Watch []string
	// Command is the program, an absolute path, and its arguments.
	Command []string
}

// Relay is one loopback listener inside the sandbox: what connects to
// Listen is tunnelled to Target through the egress proxy.
type Relay struct{ Listen, Target string }

// Flags of the helper's command line.
const (
	flagInside      = "--inner"
	flagProbe       = "--probe"
	flagReady       = "--ready-fd"
	flagRW          = "--rw"
	flagRO          = "--ro"
	flagSocket      = "--socket"
	flagProxy       = "--proxy"
	flagRelay       = "--relay"
	flagModelSocket = "--model-socket"
	flagModel       = "--model"
	flagMem         = "--mem"
	flagTasks       = "--nproc"
	flagDisk        = "--disk"
	flagWatch       = "--watch"
)

// Argv is the helper's command line for a: its flags, "--", and Command.
func (a Args) Argv() []string {
	var out []string
	if a.Inside {
		out = append(out, flagInside)
	}
	if a.Probe {
		out = append(out, flagProbe)
	}
	flag := func(name, value string) { out = append(out, name, value) }
	if a.ReadyFD > 0 {
		flag(flagReady, strconv.Itoa(a.ReadyFD))
	}
	for _, p := range a.RW {
		flag(flagRW, p)
	}
	for _, p := range a.RO {
		flag(flagRO, p)
	}
	if a.Socket != "" {
		flag(flagSocket, a.Socket)
	}
	if a.Proxy != "" {
		flag(flagProxy, a.Proxy)
	}
	for _, r := range a.Relays {
		flag(flagRelay, r.Listen+"="+r.Target)
	}
	if a.ModelSocket != "" {
		flag(flagModelSocket, a.ModelSocket)
	}
	if a.Model != "" {
		flag(flagModel, a.Model)
	}
	if a.Mem > 0 {
		flag(flagMem, strconv.FormatInt(a.Mem, 10))
	}
	if a.Tasks > 0 {
		flag(flagTasks, strconv.Itoa(a.Tasks))
	}
	if a.Disk > 0 {
		flag(flagDisk, strconv.FormatInt(a.Disk, 10))
	}
	for _, p := range a.Watch {
		flag(flagWatch, p)
	}
	return append(append(out, "--"), a.Command...)
}

// Parse reads the helper's command line, as Argv writes it. Outside the
// namespaces only --rw and --ro are taken; the program must be an
// absolute path.
func Parse(args []string) (Args, error) {
	var a Args
	if len(args) > 0 && args[0] == flagInside {
		a.Inside, args = true, args[1:]
	}
	for len(args) > 0 && args[0] != "--" {
		name := args[0]
		if name == flagProbe && a.Inside {
			a.Probe, args = true, args[1:]
			continue
		}
		if len(args) < 2 {
			return a, fmt.Errorf("flag %s needs a value", name)
		}
		v := args[1]
		args = args[2:]
		if !a.Inside && name != flagRW && name != flagRO {
			return a, fmt.Errorf("unknown flag %s: without %s the helper takes only %s and %s", name, flagInside, flagRW, flagRO)
		}
		var err error
		switch name {
		case flagReady:
			a.ReadyFD, err = strconv.Atoi(v)
		case flagRW:
			a.RW = append(a.RW, v)
		case flagRO:
			a.RO = append(a.RO, v)
		case flagSocket:
			a.Socket = v
		case flagProxy:
			a.Proxy = v
		case flagRelay:
			listen, target, ok := strings.Cut(v, "=")
			if !ok {
				return a, fmt.Errorf("%s %q: want LISTEN=TARGET", flagRelay, v)
			}
			a.Relays = append(a.Relays, Relay{listen, target})
		case flagModelSocket:
			a.ModelSocket = v
		case flagModel:
			a.Model = v
		case flagMem:
			a.Mem, err = strconv.ParseInt(v, 10, 64)
		case flagTasks:
			a.Tasks, err = strconv.Atoi(v)
		case flagDisk:
			a.Disk, err = strconv.ParseInt(v, 10, 64)
		case flagWatch:
			a.Watch = append(a.Watch, v)
		default:
			return a, fmt.Errorf("unknown flag %s", name)
		}
		if err != nil {
			return a, fmt.Errorf("%s %q: %w", name, v, err)
		}
	}
	if len(args) < 2 {
		return a, fmt.Errorf("no program after --")
	}
	a.Command = args[1:]
	if !filepath.IsAbs(a.Command[0]) {
		return a, fmt.Errorf("program %q: want an absolute path", a.Command[0])
	}
	return a, nil
}

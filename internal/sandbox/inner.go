package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Flags of the helper inside bubblewrap.
const (
	innerFlag = "--inner"
	probeFlag = "--probe"
	probeOK   = "tether confine: confined"
)

// innerArgs are the helper's flags inside bubblewrap.
type innerArgs struct {
	rw, ro        []string
	socket, proxy string
	relays        []relay
	model         string
	mem           int64
	nproc, ready  int
	probe         bool
	prog          string
	argv          []string
}

func parseInner(args []string) (innerArgs, error) {
	var a innerArgs
	for len(args) > 0 && args[0] != "--" {
		if args[0] == probeFlag {
			a.probe = true
			args = args[1:]
			continue
		}
		if len(args) < 2 {
			return a, fmt.Errorf("flag %s needs a value", args[0])
		}
		v := args[1]
		var err error
		switch args[0] {
		case "--rw":
			a.rw = append(a.rw, v)
		case "--ro":
			a.ro = append(a.ro, v)
		case "--socket":
			a.socket = v
		case "--proxy":
			a.proxy = v
		case "--model":
			a.model = v
		case "--relay":
			listen, target, ok := strings.Cut(v, "=")
			if !ok {
				return a, fmt.Errorf("--relay %q: want LISTEN=TARGET", v)
			}
			a.relays = append(a.relays, relay{listen, target})
		case "--mem":
			a.mem, err = strconv.ParseInt(v, 10, 64)
		case "--nproc":
			a.nproc, err = strconv.Atoi(v)
		case "--ready-fd":
			a.ready, err = strconv.Atoi(v)
		default:
			return a, fmt.Errorf("unknown flag %s", args[0])
		}
		if err != nil {
			return a, fmt.Errorf("%s %q: %w", args[0], v, err)
		}
		args = args[2:]
	}
	if len(args) < 2 {
		return a, fmt.Errorf("no program after --")
	}
	a.prog, a.argv = args[1], args[1:]
	if !filepath.IsAbs(a.prog) {
		return a, fmt.Errorf("program %q: want an absolute path", a.prog)
	}
	return a, nil
}

// inner is the helper as the first process of the sandbox's namespaces:
// it leaves the worker's session, joins a fresh keyring, opens the
// loopback relays to the egress proxy, drops every capability, sets the
// limits the visit has no cgroup for, applies Landlock and the seccomp
// filter, then runs the program as its child and exits with its status,
// which ends every process left in the namespace.
func inner(args []string) error {
	runtime.LockOSThread()
	// From the start: a signal the worker sends before the program runs
	// is passed on once it does, instead of killing the helper.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	// Nothing the helper got from bwrap or the worker passes on to the
	// program but its standard streams.
	closeOnExec()
	a, err := parseInner(args)
	if err != nil {
		return err
	}
	if a.ready > 0 {
		// The worker signals the program only from now on: before, a
		// signal to the namespace's first process is lost.
		_, _ = unix.Write(a.ready, []byte{1})
		unix.Close(a.ready)
	}
	// The program runs as the same user: without this it could ptrace
	// the helper, which still holds the relays.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	// A session of its own has no controlling terminal.
	if _, err := unix.Setsid(); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("setsid: %w", err)
	}
	if err := joinFreshKeyring(); err != nil {
		return err
	}
	if err := ownNetwork(); err != nil {
		return err
	}
	var lns []relayListener
	if a.proxy != "" {
		l, err := net.Listen("tcp", a.proxy)
		if err != nil {
			return fmt.Errorf("listen for the proxy on %s: %w", a.proxy, err)
		}
		lns = append(lns, relayListener{l, "", a.socket})
	}
	if a.model != "" {
		l, err := net.Listen("tcp", a.model)
		if err != nil {
			return fmt.Errorf("listen for the model relay on %s: %w", a.model, err)
		}
		lns = append(lns, relayListener{l, "", ModelSocket})
	}
	for _, r := range a.relays {
		l, err := net.Listen("tcp", r.listen)
		if err != nil && strings.HasPrefix(r.listen, "[") && errors.Is(err, unix.EADDRNOTAVAIL) {
			continue // a kernel without IPv6: localhost is 127.0.0.1 alone
		}
		if err != nil {
			return fmt.Errorf("listen for %s on %s: %w", r.target, r.listen, err)
		}
		lns = append(lns, relayListener{l, r.target, a.socket})
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := setLimits(a.nproc); err != nil {
		return err
	}
	if err := restrict(a.rw, a.ro, true); err != nil {
		return err
	}
	if err := installSeccomp(); err != nil {
		return err
	}
	if a.probe {
		if err := checkConfined(); err != nil {
			return err
		}
		fmt.Println(probeOK)
		os.Exit(0)
	}
	for _, l := range lns {
		go serveRelay(l)
	}
	if a.mem > 0 || a.nproc > 0 {
		go watch(a.mem, a.nproc)
	}
	code, err := runAsInit(a.prog, a.argv, sigs)
	if err != nil {
		return err
	}
	os.Exit(code)
	return nil
}

// closeOnExec marks every descriptor above the standard streams
// close-on-exec.
func closeOnExec() {
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// joinFreshKeyring gives the helper, and so the program, a new anonymous
// session keyring: nothing of another visit's, gone with the visit.
func joinFreshKeyring() error {
	_, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	if errno != 0 && errno != unix.ENOSYS {
		return fmt.Errorf("join a fresh session keyring: %w", errno)
	}
	return nil
}

// setLimits bounds the processes of the sandbox's user where no cgroup
// does (0 leaves it alone). The kernel holds an unprivileged worker's
// sandbox to it, counted in the sandbox's own user namespace; a root
// worker's is exempt. The helper's own threads count against it, so it
// gets a margin.
func setLimits(nproc int) error {
	if nproc > 0 {
		n := uint64(nproc + helperTasks)
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return fmt.Errorf("limit processes: %w", err)
		}
	}
	return nil
}

// checkConfined is the probe's own check that what bwrap and the helper
// promise holds: not root, and no capability left.
func checkConfined() error {
	if os.Getuid() == 0 || os.Geteuid() == 0 {
		return errors.New("the helper runs as root inside the sandbox")
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("the helper kept capabilities inside the sandbox")
		}
	}
	return nil
}

// runAsInit runs the program as the helper's child, in a process group of
// its own, and stays the namespace's first process: it passes on the
// signals the worker sends to the program's group, reaps orphans, and
// returns the program's exit status (128+signal when a signal ended it).
func runAsInit(prog string, argv []string, sigs chan os.Signal) (int, error) {
	p, err := os.StartProcess(prog, argv, &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", prog, err)
	}
	go func() {
		for s := range sigs {
			_ = syscall.Kill(-p.Pid, s.(syscall.Signal))
		}
	}()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("wait for %s: %w", prog, err)
		}
		if pid != p.Pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ws.ExitStatus(), nil
	}
}

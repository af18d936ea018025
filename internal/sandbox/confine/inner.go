package confine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProbeOK is what the helper prints when a probe (Args.Probe) finds it
// confined.
const ProbeOK = "tether confine: confined"

// inner is the helper as the first process of the sandbox's namespaces:
// it leaves the worker's session, joins a fresh keyring, opens the
// loopback relays to the egress proxy, drops every capability, sets the
// limits the visit has no cgroup for, applies Landlock and the seccomp
// filter, then runs the program as its child and exits with its status,
// which ends every process left in the namespace.
func inner(a Args) error {
	runtime.LockOSThread()
	// From the start: a signal the worker sends before the program runs
	// is passed on once it does, instead of killing the helper.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	// Nothing the helper got from bwrap or the worker passes on to the
	// program but its standard streams.
	closeOnExec()
	if a.ReadyFD > 0 {
		// The worker signals the program only from now on: before, a
		// signal to the namespace's first process is lost.
		_, _ = unix.Write(a.ReadyFD, []byte{1})
		unix.Close(a.ReadyFD)
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
	if a.Proxy != "" {
		l, err := net.Listen("tcp", a.Proxy)
		if err != nil {
			return fmt.Errorf("listen for the proxy on %s: %w", a.Proxy, err)
		}
		lns = append(lns, relayListener{l, "", a.Socket})
	}
	if a.Model != "" {
		l, err := net.Listen("tcp", a.Model)
		if err != nil {
			return fmt.Errorf("listen for the model relay on %s: %w", a.Model, err)
		}
		lns = append(lns, relayListener{l, "", a.ModelSocket})
	}
	for _, r := range a.Relays {
		l, err := net.Listen("tcp", r.Listen)
		if err != nil && strings.HasPrefix(r.Listen, "[") && errors.Is(err, unix.EADDRNOTAVAIL) {
			continue // a kernel without IPv6: localhost is 127.0.0.1 alone
		}
		if err != nil {
			return fmt.Errorf("listen for %s on %s: %w", r.Target, r.Listen, err)
		}
		lns = append(lns, relayListener{l, r.Target, a.Socket})
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := setLimits(a.Tasks); err != nil {
		return err
	}
	if err := restrict(a.RW, a.RO, true); err != nil {
		return err
	}
	if err := installSeccomp(); err != nil {
		return err
	}
	if a.Probe {
		if err := checkConfined(); err != nil {
			return err
		}
		fmt.Println(ProbeOK)
		os.Exit(0)
	}
	for _, l := range lns {
		go serveRelay(l)
	}
	if a.Mem > 0 || a.Tasks > 0 {
		go watch(a.Mem, a.Tasks)
	}
	if a.Disk > 0 && len(a.Watch) > 0 {
		go watchDisk(a.Disk, a.Watch)
	}
	code, err := runAsInit(a.Command[0], a.Command, sigs)
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
// signals the worker sends to the program's group, reaps orphans, runs
// what the watches ask of the thread the program was started from
// (onFirstThread), and returns the program's exit status (128+signal when
// a signal ended it).
func runAsInit(prog string, argv []string, sigs chan os.Signal) (int, error) {
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
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
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("wait for %s: %w", prog, err)
			}
			if pid == 0 {
				break // children left, none ended
			}
			if pid != p.Pid {
				continue
			}
			if ws.Signaled() {
				return 128 + int(ws.Signal()), nil
			}
			return ws.ExitStatus(), nil
		}
		select {
		case <-children:
		case f := <-firstThread:
			f()
		}
	}
}

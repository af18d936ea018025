package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// nsAttr makes a new PID and mount namespace for the process it starts
// and, when this process is not root, a user namespace that maps only its
// own ids, in which the new process holds CAP_SYS_ADMIN just long enough
// to mount its /proc. Writing that map needs a dumpable parent, which the
// worker is not (HideEnviron): so the helper, freshly exec'd and dumpable,
// is what creates the namespaces (runInNamespaces).
func nsAttr(attr *syscall.SysProcAttr) {
	attr.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	if os.Geteuid() == 0 {
		return
	}
	uid, gid := os.Getuid(), os.Getgid()
	attr.Cloneflags |= syscall.CLONE_NEWUSER
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
}

// runInNamespaces starts the helper again, with --init and args, as the
// first process of new namespaces, passes on the signals it gets, and
// returns the exit status (128+signal when a signal ended it).
func runInNamespaces(args []string) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find the helper: %w", err)
	}
	cmd := exec.Command(self, append([]string{Subcommand, "--init"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// If this helper dies, the namespace's first process dies with it,
	// and the kernel ends everything else in the namespace.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	nsAttr(cmd.SysProcAttr)
	runtime.LockOSThread()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start in new PID and mount namespaces: %w", err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}

// probeNamespaces runs the helper in new namespaces once, to learn whether
// this machine allows them (a container without CAP_SYS_ADMIN, or with
// user namespaces blocked, does not).
func probeNamespaces(helper []string) error {
	probe := "/bin/true"
	if _, err := os.Stat(probe); err != nil {
		probe = "/usr/bin/true"
	}
	argv := append(append([]string(nil), helper...), "--ns", "--", probe)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// mountProc gives the helper's new mount namespace a /proc of its new PID
// namespace, after making every mount private so that nothing propagates
// back to the worker's namespace.
func mountProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	// What in /proc acts on the whole machine is also read-only at the
	// mount, as a container runtime leaves it (Landlock already gives
	// /proc no write access; this holds should that ever change).
	for _, p := range procReadOnly {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	return nil
}

// procReadOnly are the machine-wide parts of /proc.
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/kcore", "/proc/kmsg"}

// droppedCaps are the capabilities no confined process keeps, even as root:
// reading other processes (ptrace), escaping path checks
// (open_by_handle_at), mounting, loading modules, raw devices, BPF.
var droppedCaps = []uintptr{
	unix.CAP_SYS_PTRACE, unix.CAP_DAC_READ_SEARCH, unix.CAP_SYS_ADMIN, unix.CAP_SYS_MODULE,
	unix.CAP_SYS_RAWIO, unix.CAP_SYS_BOOT, unix.CAP_NET_ADMIN, unix.CAP_MKNOD, unix.CAP_SYS_TIME,
	unix.CAP_MAC_ADMIN, unix.CAP_MAC_OVERRIDE, unix.CAP_SYSLOG, unix.CAP_BPF, unix.CAP_PERFMON,
	unix.CAP_CHECKPOINT_RESTORE, unix.CAP_AUDIT_CONTROL, unix.CAP_SETPCAP,
}

// dropCapabilities removes droppedCaps from the bounding set (so a root
// program does not regain them at exec), from the ambient set and from the
// helper's own sets.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	for _, c := range droppedCaps {
		// EPERM: no CAP_SETPCAP (not root), and then exec grants nothing
		// from the bounding set anyway; EINVAL: a capability this kernel
		// does not know.
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, c := range droppedCaps {
		mask := ^uint32(1 << (c % 32))
		d := &data[c/32]
		d.Effective &= mask
		d.Permitted &= mask
		d.Inheritable &= mask
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// runAsInit runs the program as the child of the helper, which stays the
// first process of the PID namespace: it passes on the signals the worker
// sends, reaps orphans, and returns the program's exit status (128+signal
// when a signal ended it). When it returns, the kernel ends whatever is
// left in the namespace.
func runAsInit(prog string, argv []string) (int, error) {
	p, err := os.StartProcess(prog, argv, &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", prog, err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for s := range sigs {
			_ = p.Signal(s)
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

package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/tether-run/tether/internal/egress"
)

// Launch is one confined process as the worker starts it: the argv and
// environment to start, and what the worker holds for it while it runs
// (its egress proxy, its cgroup, its generated files).
type Launch struct {
	// Argv and Env are what to start.
	Argv []string
	Env  []string

	dir           string
	proxy         *egress.Listener
	cg            *visitCgroup
	info, infoW   *os.File
	ready, readyW *os.File
	// pid is the helper's pid outside the sandbox, once bwrap said it
	// and the helper said it is ready for signals.
	pid   atomic.Int64
	visit *Visit
}

// Launch prepares program path with args and environment env under
// policy p and the sandbox's own extra paths. The caller starts Argv with
// Env (after Prepare), calls Started once it runs, and Finish once it is
// done, whatever happened. A nil s runs the program unconfined.
func (s *Sandbox) Launch(p Policy, path string, args, env []string, v *Visit) (*Launch, error) {
	if s == nil || s.Level == LevelNone {
		return &Launch{Argv: append([]string{path}, args...), Env: env, visit: v}, nil
	}
	rw := append(slices.Clone(p.RW), s.RW...)
	ro := append(slices.Clone(p.RO), s.RO...)
	if s.Level == LevelLandlock {
		argv := slices.Clone(s.Helper)
		for _, d := range clean(rw) {
			argv = append(argv, "--rw", d)
		}
		for _, d := range clean(ro) {
			argv = append(argv, "--ro", d)
		}
		argv = append(append(argv, "--", path), args...)
		return &Launch{Argv: argv, Env: env, visit: v}, nil
	}
	l := &Launch{visit: v}
	ok := false
	defer func() {
		if !ok {
			l.Finish()
		}
	}()
	var err error
	if l.dir, err = os.MkdirTemp(s.runDir, "v-"); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	lim := p.Limits.with(s.Defaults)
	var inner []string
	env = withoutProxyVars(env)
	proxied := len(p.Allow) > 0 || p.Proxy
	plan := planNetwork(p.Allow, p.Model.Listen, proxied)
	if proxied {
		sock := filepath.Join(l.dir, "egress.sock")
		if l.proxy, err = s.guard.Listen(sock, p.Allow, s.log); err != nil {
			return nil, err
		}
	}
	inner = append(inner, plan.flags()...)
	env = append(env, plan.env()...)
	files, err := writeLaunchFiles(l.dir, p.Home, plan.hosts)
	if err != nil {
		return nil, err
	}
	if l.proxy != nil {
		files.socket = filepath.Join(l.dir, "egress.sock")
	}
	files.model = p.Model.Socket
	if s.cgroups != nil {
		if l.cg, err = s.cgroups.create(lim); err != nil {
			return nil, err
		}
	} else {
		inner = append(inner, "--mem", strconv.FormatInt(lim.MemoryBytes, 10), "--nproc", strconv.Itoa(lim.Pids))
	}
	// Landlock inside: what is bound, as it is reached inside (each path
	// and its real path), and /tmp.
	for _, d := range landlockPaths(rw) {
		inner = append(inner, "--rw", d)
	}
	inner = append(inner, "--rw", "/tmp")
	for _, d := range landlockPaths(ro) {
		inner = append(inner, "--ro", d)
	}
	inner = append(append(append([]string{innerFlag, "--ready-fd", "4"}, inner...), "--", path), args...)
	p.RW, p.RO = rw, ro
	if l.Argv, err = s.bwrapArgv(p, files, inner); err != nil {
		return nil, err
	}
	if l.info, l.infoW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if l.ready, l.readyW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	l.Env = env
	ok = true
	return l, nil
}

// landlockPaths are paths and, where they differ, their real paths.
func landlockPaths(paths []string) []string {
	var out []string
	for _, p := range clean(paths) {
		out = append(out, p)
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			out = append(out, real)
		}
	}
	return out
}

// Prepare sets what cmd needs beyond Argv and Env: bwrap's status pipe,
// and the visit's cgroup to start in.
func (l *Launch) Prepare(cmd *exec.Cmd) {
	if l.infoW != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, l.infoW, l.readyW)
	}
	if l.cg != nil {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = l.cg.fd
	}
}

// Started is called once the process runs: it learns the helper's pid
// from bwrap, for Signal.
func (l *Launch) Started() {
	if l.infoW == nil {
		return
	}
	l.infoW.Close()
	l.readyW.Close()
	l.infoW, l.readyW = nil, nil
	info, ready := l.info, l.ready
	go func() {
		var st struct {
			ChildPID int64 `json:"child-pid"`
		}
		err := json.NewDecoder(io.LimitReader(info, 4096)).Decode(&st)
		var b [1]byte
		if n, _ := ready.Read(b[:]); n == 1 && err == nil && st.ChildPID > 0 {
			l.pid.CompareAndSwap(0, st.ChildPID)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(info, 1<<16))
	}()
}

// Signal sends sig to the program, through the helper that runs it (which
// passes it on to the program's process group), and reports whether it
// could: bubblewrap itself does not pass signals on, and dies of most.
// The caller signals the process it started otherwise.
func (l *Launch) Signal(sig syscall.Signal) bool {
	if l == nil {
		return false
	}
	pid := l.pid.Load()
	if pid <= 0 {
		return false
	}
	return syscall.Kill(int(pid), sig) == nil
}

// Finish ends what is left of the process (its cgroup, killed whole), stops
// its proxy, removes its files, and notes on its visit what the proxy
// refused. It returns those refusals, and whether the visit's cgroup
// killed a process for going over its memory limit.
func (l *Launch) Finish() (refused []string, oomKilled bool) {
	l.pid.Store(-1)
	if l.cg != nil {
		oomKilled = l.cg.oomKills() > 0
		l.cg.remove()
		l.cg = nil
	}
	if l.proxy != nil {
		_ = l.proxy.Close()
		refused = l.proxy.Refused()
		l.visit.Note(refused)
		l.proxy = nil
	}
	for _, f := range []**os.File{&l.info, &l.infoW, &l.ready, &l.readyW} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	if l.dir != "" {
		_ = os.RemoveAll(l.dir)
		l.dir = ""
	}
	return refused, oomKilled
}

package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/tether-run/tether/internal/egress"
	"github.com/tether-run/tether/internal/sandbox/confine"
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
//
// The program is checked as Program checks it (ErrProgram, or an error
// wrapping fs.ErrNotExist), and only the file is given to the process,
// never the directory it lies in; a path of p that would give it the
// root or what holds the worker's own directories is ErrPath.
func (s *Sandbox) Launch(p Policy, path string, args, env []string, v *Visit) (*Launch, error) {
	if s == nil || s.Level == LevelNone {
		return &Launch{Argv: append([]string{path}, args...), Env: env, visit: v}, nil
	}
	extra, err := s.programFile(p, path)
	if err != nil {
		return nil, err
	}
	p.RO = append(slices.Clone(p.RO), extra...)
	ro, rw, err := s.paths(p)
	if err != nil {
		return nil, err
	}
	if s.Level == LevelLandlock {
		for _, d := range append(slices.Clone(ro), rw...) {
			if real, err := filepath.EvalSymlinks(d); err == nil {
				if err := s.checkBind(d, real); err != nil {
					return nil, err
				}
			}
		}
		a := confine.Args{RW: rw, RO: ro, Command: append([]string{path}, args...)}
		return &Launch{Argv: append(slices.Clone(s.Helper), a.Argv()...), Env: env, visit: v}, nil
	}
	m, err := s.mounts(ro, rw)
	if err != nil {
		return nil, err
	}
	l := &Launch{visit: v}
	ok := false
	defer func() {
		if !ok {
			l.Finish()
		}
	}()
	if l.dir, err = os.MkdirTemp(s.runDir, "v-"); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	lim := p.Limits.with(s.Defaults)
	p.Limits = lim
	env = withoutProxyVars(env)
	if p.Tmp != "" {
		// The program's temporary files go to the sandbox's own /tmp,
		// bounded by the visit's disk limit, not to a directory of the
		// worker's disk.
		env = setEnv(env, "TMPDIR", "/tmp")
	}
	// The helper's descriptor 4 is the ready pipe (Prepare).
	inner := confine.Args{Inside: true, ReadyFD: 4, Command: append([]string{path}, args...)}
	proxied := len(p.Allow) > 0 || p.Proxy
	plan := planNetwork(p.Allow, p.Model.Listen, proxied)
	if proxied {
		sock := filepath.Join(l.dir, "egress.sock")
		if l.proxy, err = s.guard.Listen(sock, p.Allow, s.log); err != nil {
			return nil, err
		}
	}
	plan.apply(&inner)
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
		inner.Mem, inner.Tasks = lim.MemoryBytes, lim.Pids
	}
	// What the visit writes to the worker's disk is watched: its
	// read-write paths, but the caches its environment names and the
	// worker's extra paths, which other visits share.
	inner.Disk = lim.DiskBytes
	shared := realPaths(append(EnvPaths(env, CacheVars), s.RW...))
	for _, b := range m.binds {
		if b.rw && !underAnyReal(b.path, shared) {
			inner.Watch = append(inner.Watch, b.path)
		}
	}
	// Landlock inside: what is bound, at its real path (every alias
	// leads there), and /tmp.
	for _, b := range m.binds {
		if b.rw {
			inner.RW = append(inner.RW, b.path)
		} else {
			inner.RO = append(inner.RO, b.path)
		}
	}
	inner.RW = append(inner.RW, "/tmp")
	if l.Argv, err = s.bwrapArgv(p, m, files, inner.Argv()); err != nil {
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

// realPaths are the paths, each with its links followed; those that do
// not resolve are left out.
func realPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if real, err := filepath.EvalSymlinks(p); err == nil && filepath.IsAbs(real) {
			out = append(out, real)
		}
	}
	return out
}

// underAnyReal reports whether p lies in one of the real paths dirs.
func underAnyReal(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return within(p, d) })
}

// setEnv is env with name set to value, in place of any value it had.
func setEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if n, _, _ := strings.Cut(kv, "="); n != name {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
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

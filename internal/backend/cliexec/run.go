// Package cliexec is what the CLI executors share: their common Options,
// the start of a visit (CLI), the child environment (Environ), and the one
// process runner of the worker (Run), which also runs tool nodes. Run
// resolves the binary, puts the process in its own group that dies with
// the worker, feeds the prompt on stdin, hands each stdout line to the
// caller as it arrives (or the raw bytes to a writer), keeps the tail of
// stderr, heartbeats while the process runs, and enforces the timeout and
// cancellation by killing the whole process group (the CLI, its MCP
// servers and any tool processes it started).
//
// Failures come back typed: agent.ErrNotInstalled for a missing binary,
// agent.ErrTimeout when the deadline passed, the context's error when the
// visit was cancelled, and *agent.ExitError for a non-zero exit.
package cliexec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/hostport"
	"github.com/tether-run/tether/internal/sandbox"
)

// Defaults for Spec fields left zero.
const (
	DefaultHeartbeatEvery = 10 * time.Second
	// DefaultStopGrace is how long a CLI may take to exit after Stop asked it
	// to (SIGTERM to the group) before the group is killed.
	DefaultStopGrace = 5 * time.Second
	stderrTailBytes  = 4096
)

// Spec is one CLI run.
type Spec struct {
	// Backend names what runs (a backend, a tool node); it starts every
	// error Run returns.
	Backend string
	// Bin is the program: a path (a relative one is taken from Dir), or a
	// name looked up in BinDir (when set) or in PATH.
	Bin    string
	BinDir string
	Args   []string
	Dir    string
	// Env is the complete environment of the CLI.
	Env   []string
	Stdin string
	// Timeout bounds the run; zero means only ctx bounds it.
	Timeout time.Duration
	// Heartbeat, when set, is called at the start and every HeartbeatEvery
	// while the CLI runs, with a Progress value.
	Heartbeat      func(details any)
	HeartbeatEvery time.Duration
	// OnLine receives each stdout line (without the newline), in order.
	OnLine func(line []byte)
	// Stdout, when set, receives stdout as it comes, in place of OnLine:
	// for a program whose output is kept as bytes rather than read as
	// lines (a tool node's tail).
	Stdout io.Writer
	// Stderr, when set, receives stderr too; Outcome.StderrTail keeps its
	// tail either way.
	Stderr io.Writer
	// Stop is polled while the CLI runs; once it returns true the CLI's group
	// gets SIGTERM, then SIGKILL after StopGrace. A run ended this way is not
	// an error whatever its exit status.
	Stop      func() bool
	StopGrace time.Duration
	// Sandbox, when set, confines the program (see Confinement); nil runs
	// it unconfined.
	Sandbox *sandbox.Sandbox
	Confinement
	// ModelEndpoints are the host:port of the agent's model, which a
	// confined agent may reach unless its node says otherwise (the
	// visit's sandbox.Visit in the run's context): when no model relay
	// carries its calls.
	ModelEndpoints []string
	// Model is the worker's model relay as a network-confined program
	// reaches it (zero: none, or on the worker's own loopback).
	Model sandbox.ModelRelay
}

// Confinement is what a confined program may reach besides the system
// paths: Dir, Home, TempDir and Writable read-write, Readable (and the
// program's own directory) read-only, and the cache and toolchain
// directories its environment names (sandbox.CacheVars, sandbox.ReadVars).
// Home and TempDir also replace HOME and TMPDIR in its environment, so
// that nothing it writes lands in the worker's home or a shared /tmp,
// also in an unconfined run (no Sandbox).
type Confinement struct {
	Home, TempDir      string
	Writable, Readable []string
	// ReadOnlyDir makes Dir read-only (an agent whose permissions allow
	// no edits, when the worker's sandbox stands in for its CLI's own).
	ReadOnlyDir bool
}

// Progress is what a heartbeat reports.
type Progress struct {
	Backend     string        `json:"backend"`
	Elapsed     time.Duration `json:"elapsed"`
	StdoutLines int           `json:"stdout_lines"`
}

// Outcome is what a finished run left behind.
type Outcome struct {
	ExitCode   int
	StderrTail string
	Duration   time.Duration
	// Stopped is true when Stop ended the run.
	Stopped bool
}

// Resolve returns the path of bin: bin itself when it holds a slash, else
// BinDir/bin when dir is set, else the PATH entry. A missing or
// non-executable program is agent.ErrNotInstalled.
func Resolve(backendName, dir, bin string) (string, error) {
	var p string
	switch {
	case strings.ContainsRune(bin, filepath.Separator):
		p = bin
	case dir != "":
		p = filepath.Join(dir, bin)
	default:
		lp, err := exec.LookPath(bin)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %q is not on the worker's PATH; install it on every worker (scripts/tools.sh clis), or set TETHER_CLI_BIN to the directory that holds it", agent.ErrNotInstalled, backendName, bin)
		}
		return lp, nil
	}
	st, err := os.Stat(p)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		if err == nil {
			err = fs.ErrPermission
		}
		return "", fmt.Errorf("%w: %s: %s: %v; install it there (scripts/tools.sh clis), or point TETHER_CLI_BIN at the directory that holds it", agent.ErrNotInstalled, backendName, p, err)
	}
	return p, nil
}

// Run runs the CLI to completion. A nil error means exit status 0 (or a
// run that Stop ended).
func Run(ctx context.Context, s Spec) (Outcome, error) {
	env := s.environ()
	var pol sandbox.Policy
	if s.Sandbox != nil {
		pol = s.policy(ctx, env)
	}
	path, err := s.program(pol, env)
	if err != nil {
		return Outcome{}, err
	}
	if err := ctx.Err(); err != nil {
		return Outcome{}, fmt.Errorf("%s: not started: %w", s.Backend, err)
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if s.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, s.Timeout)
	}
	defer cancel()
	grace := s.StopGrace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	// Pdeathsig (set by start) follows the thread that forked, so that
	// thread stays locked to this call until Wait.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, err := s.start(ctx, path, env, pol, grace)
	if err != nil {
		return Outcome{}, err
	}
	defer p.stdout.Close()
	defer p.finish()
	go p.read(s)
	waitDone := make(chan error, 1)
	go func() { waitDone <- p.cmd.Wait() }()

	var out Outcome
	killed, waitErr := p.supervise(runCtx, s, grace, waitDone, &out)
	p.reap(grace)
	out.Duration = time.Since(p.began)
	out.StderrTail = strings.TrimSpace(strings.ToValidUTF8(string(p.tail.Bytes()), ""))
	if p.cmd.ProcessState != nil {
		out.ExitCode = p.cmd.ProcessState.ExitCode()
	}
	return out, s.verdict(ctx, out, killed, waitErr)
}

// program resolves the binary to run. A relative path with a slash is
// where the process will run, not where the worker does. A confined
// program is found as its sandbox will see it (sandbox.Program): a path
// through ".." or to a file outside what the sandbox may run is
// agent.ErrPathRefused.
func (s Spec) program(p sandbox.Policy, env []string) (string, error) {
	if s.Sandbox.Confines() {
		path, err := s.Sandbox.Program(p, s.Bin, s.BinDir, env)
		switch {
		case err == nil:
			return path, nil
		case errors.Is(err, sandbox.ErrProgram):
			return "", fmt.Errorf("%w: %s: %v", agent.ErrPathRefused, s.Backend, err)
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("%w: %s: %v; install it (scripts/tools.sh clis) or fix the executor's BinDir", agent.ErrNotInstalled, s.Backend, err)
		}
		return "", fmt.Errorf("%s: %w", s.Backend, err)
	}
	bin := s.Bin
	if strings.ContainsRune(bin, filepath.Separator) && !filepath.IsAbs(bin) && s.Dir != "" {
		abs, err := filepath.Abs(filepath.Join(s.Dir, bin))
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.Backend, err)
		}
		bin = abs
	}
	return Resolve(s.Backend, s.BinDir, bin)
}

// proc is one started process: its command, the read end of its stdout,
// the tail of its stderr, and the stdout lines counted so far.
type proc struct {
	cmd *exec.Cmd
	// launch is the program's confinement, while it runs.
	launch   *sandbox.Launch
	stdout   *os.File
	tail     *TailBuffer
	began    time.Time
	mu       sync.Mutex
	lines    int
	readDone chan struct{}
}

// start starts the program in a session and process group of its own
// (no controlling terminal), which dies with the worker, with the prompt
// on stdin; confined when the spec has a sandbox.
func (s Spec) start(ctx context.Context, path string, env []string, pol sandbox.Policy, grace time.Duration) (*proc, error) {
	argv := append([]string{path}, s.Args...)
	var launch *sandbox.Launch
	if s.Sandbox != nil {
		l, err := s.Sandbox.Launch(pol, path, s.Args, env, sandbox.VisitOf(ctx))
		switch {
		case errors.Is(err, sandbox.ErrProgram), errors.Is(err, sandbox.ErrPath):
			return nil, fmt.Errorf("%w: %s: %v", agent.ErrPathRefused, s.Backend, err)
		case err != nil:
			return nil, fmt.Errorf("%s: %w", s.Backend, err)
		}
		launch, argv, env = l, l.Argv, l.Env
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(s.Stdin)
	// Pdeathsig: if the worker dies (SIGKILL, OOM), the CLI dies with it
	// instead of running on as an orphan. Setsid: a terminal the worker
	// was started from is never the CLI's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if launch != nil {
		launch.Prepare(cmd)
	}
	// Stderr is copied by os/exec; WaitDelay bounds that copy when a process
	// that escaped the group still holds the pipe.
	p := &proc{cmd: cmd, launch: launch, tail: NewTailBuffer(stderrTailBytes), readDone: make(chan struct{})}
	cmd.Stderr = p.tail
	if s.Stderr != nil {
		cmd.Stderr = io.MultiWriter(p.tail, s.Stderr)
	}
	cmd.WaitDelay = grace
	// Stdout is a plain pipe read here, so that Wait does not depend on it.
	pr, pw, err := os.Pipe()
	if err != nil {
		p.finish()
		return nil, fmt.Errorf("%s: %w", s.Backend, err)
	}
	cmd.Stdout = pw
	p.began = time.Now()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		p.finish()
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("%w: %s: %v", agent.ErrNotInstalled, s.Backend, err)
		}
		return nil, fmt.Errorf("%s: start %s: %w", s.Backend, path, err)
	}
	if launch != nil {
		launch.Started()
	}
	p.stdout = pr
	return p, nil
}

// finish ends the program's confinement: its cgroup, its egress proxy
// (whose refusals its visit keeps), its files.
func (p *proc) finish() {
	if p.launch != nil {
		p.launch.Finish()
		p.launch = nil
	}
}

// kill signals the whole process group; a confined program gets any
// signal but SIGKILL through its sandbox's helper, since bubblewrap,
// which leads the group, would die of it at once and take the program
// with it.
func (p *proc) kill(sig syscall.Signal) {
	if sig != syscall.SIGKILL && p.launch.Signal(sig) {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// read hands stdout to the spec's writer, or line by line to OnLine,
// counting lines for the heartbeat, until the last holder of the pipe is
// gone.
func (p *proc) read(s Spec) {
	defer close(p.readDone)
	if s.Stdout != nil {
		_, _ = io.Copy(s.Stdout, p.stdout)
		return
	}
	r := bufio.NewReaderSize(p.stdout, 64*1024)
	for {
		line, err := r.ReadBytes('\n')
		if line = trimEOL(line); len(line) > 0 {
			p.mu.Lock()
			p.lines++
			p.mu.Unlock()
			if s.OnLine != nil {
				s.OnLine(line)
			}
		}
		if err != nil {
			return
		}
	}
}

// supervise waits for the process, heartbeating, asking Stop, and killing
// the group on timeout or cancellation. It returns why the group was
// killed (nil if it was not) and Wait's error.
func (p *proc) supervise(runCtx context.Context, s Spec, grace time.Duration, waitDone <-chan error, out *Outcome) (killed, waitErr error) {
	every := s.HeartbeatEvery
	if every <= 0 {
		every = DefaultHeartbeatEvery
	}
	beat := func() {
		if s.Heartbeat != nil {
			p.mu.Lock()
			n := p.lines
			p.mu.Unlock()
			s.Heartbeat(Progress{Backend: s.Backend, Elapsed: time.Since(p.began).Round(time.Millisecond), StdoutLines: n})
		}
	}
	beat()
	heartbeat := time.NewTicker(every)
	defer heartbeat.Stop()
	poll := time.NewTicker(200 * time.Millisecond)
	defer poll.Stop()
	var stopping <-chan time.Time
	for {
		select {
		case waitErr = <-waitDone:
			return killed, waitErr
		case <-heartbeat.C:
			beat()
		case <-poll.C:
			if s.Stop != nil && !out.Stopped && s.Stop() {
				out.Stopped = true
				p.kill(syscall.SIGTERM)
				stopping = time.After(grace)
			}
		case <-stopping:
			p.kill(syscall.SIGKILL)
		case <-runCtx.Done():
			if killed == nil {
				killed = runCtx.Err()
				p.kill(syscall.SIGKILL)
			}
		}
	}
}

// reap kills anything the CLI left behind in its group (MCP servers, tool
// processes; the group is gone already in the usual case) and waits for
// the reader, which ends when the last holder of stdout is gone: at once,
// unless something escaped the group.
func (p *proc) reap(grace time.Duration) {
	p.kill(syscall.SIGKILL)
	select {
	case <-p.readDone:
	case <-time.After(grace):
		p.stdout.Close()
		<-p.readDone
	}
}

// verdict types the end of a run: a timeout, a cancellation, a stop, a
// non-zero exit, or success.
func (s Spec) verdict(ctx context.Context, out Outcome, killed, waitErr error) error {
	switch {
	case killed != nil && ctx.Err() == nil || errors.Is(killed, context.DeadlineExceeded):
		return fmt.Errorf("%w: %s ran for %s (limit %s); its process group was killed",
			agent.ErrTimeout, s.Backend, out.Duration.Round(time.Millisecond), s.Timeout)
	case killed != nil:
		return fmt.Errorf("%s: visit cancelled, process group killed: %w", s.Backend, killed)
	case out.Stopped:
		return nil
	case waitErr != nil:
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			return &agent.ExitError{Backend: s.Backend, Code: out.ExitCode, StderrTail: out.StderrTail}
		}
		return fmt.Errorf("%s: %w", s.Backend, waitErr)
	}
	return nil
}

// environ is the program's environment: Env, with HOME and TMPDIR the
// spec's own Home and TempDir where it has them, confined or not.
func (s Spec) environ() []string {
	env := s.Env
	if s.Home != "" {
		env = setEnv(env, "HOME", s.Home)
	}
	if s.TempDir != "" {
		env = setEnv(env, "TMPDIR", s.TempDir)
	}
	return env
}

// policy is what the program, with environment env, may reach under the
// spec's sandbox: its paths, and the network of its visit (the model's
// endpoints by default for an agent, nothing for a tool). The program's
// own directory is never among its paths: the sandbox finds the program
// where the process may already read it (sandbox.Program).
func (s Spec) policy(ctx context.Context, env []string) sandbox.Policy {
	p := sandbox.Policy{
		RW:   append(append([]string{s.Home, s.TempDir}, s.Writable...), sandbox.EnvPaths(env, sandbox.CacheVars)...),
		RO:   append(slices.Clone(s.Readable), sandbox.EnvPaths(env, sandbox.ReadVars)...),
		Tmp:  s.TempDir,
		Home: s.Home,
		Dir:  s.Dir,
	}
	if s.ReadOnlyDir {
		p.RO = append(p.RO, s.Dir)
	} else {
		p.RW = append(p.RW, s.Dir)
	}
	v := sandbox.VisitOf(ctx)
	if v == nil || v.Model {
		// An agent's: what it tries beyond its model is refused at the
		// proxy and noted, whether its model is reached through the
		// model relay or the proxy.
		p.Proxy = true
		for _, e := range s.ModelEndpoints {
			// An endpoint that does not parse is not reached: the visit
			// fails where it talks to its model, never runs unconfined.
			if pat, err := hostport.ParsePattern(e); err == nil {
				p.Allow = append(p.Allow, pat)
			}
		}
	}
	if v != nil {
		p.Allow = append(p.Allow, v.Allow...)
		p.Limits = v.Limits
	}
	p.Model = s.Model
	return p
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

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// TailBuffer keeps the last bytes written to it, up to its size. It is safe
// for concurrent use.
type TailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTailBuffer returns a buffer that keeps the last max bytes.
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

// Write keeps the tail of what was written so far, p included.
func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// Bytes is a copy of the tail, which may start inside a UTF-8 sequence.
func (t *TailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}

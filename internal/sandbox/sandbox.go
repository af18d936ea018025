// Package sandbox is the worker's side of confining the processes it
// starts for a visit (agent CLIs and tool nodes) to one rule: a confined
// process reads and writes its run's working directory, its state root
// and its scratch space, reads the system paths it needs, reaches the
// network endpoints its node allows, and nothing else; and nothing of it
// outlives the visit.
//
// It decides what a visit is given, from paths it resolved, never from a
// path's text (Program, Launch): the program, found as the sandbox sees
// it and never by its directory, and the paths of the visit's Policy.
// Where the machine allows user namespaces, every confined process runs
// under bubblewrap (bwrap) in new user, mount, PID, IPC, UTS and cgroup
// namespaces, as a non-zero uid without capabilities, in a new session
// without a terminal, on a minimal root built from binds with a fresh
// /proc, /dev and /tmp; the confine helper (internal/sandbox/confine, a
// process of its own, built alone as tether-confine) runs inside as its
// first process with the confine.Args the worker gives it, confines
// itself and starts the program, while the worker serves the visit's
// egress proxy (internal/egress) and its cgroup. Where namespaces are not
// available the helper alone applies Landlock and the seccomp filter
// (LevelLandlock), and the worker refuses the nodes whose promises it
// cannot keep (see Admit).
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"github.com/tether-run/tether/internal/sandbox/confine"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/tether-run/tether/internal/egress"
	"github.com/tether-run/tether/internal/sandbox/mode"
)

// Modes of confinement, as TETHER_SANDBOX spells them (package mode, which
// the configuration reads without linking the sandbox).
const (
	ModeAuto     = mode.Auto
	ModeFull     = mode.Full
	ModeLandlock = mode.Landlock
	ModeOff      = mode.Off
)

// Level is the confinement in force.
type Level int

// Levels, weakest first.
const (
	// LevelNone runs processes unconfined (ModeAuto without Landlock).
	LevelNone Level = iota
	// LevelLandlock is Landlock, the seccomp filter and dropped
	// capabilities, without namespaces: no network confinement, no
	// private /proc, /dev or IPC.
	LevelLandlock
	// LevelFull is everything the package doc describes.
	LevelFull
)

func (l Level) String() string {
	switch l {
	case LevelFull:
		return "namespaces (bubblewrap) + landlock + seccomp + egress proxy"
	case LevelLandlock:
		return "landlock + seccomp, no namespaces"
	}
	return "none"
}

// ErrUnsupported is returned when a mode requires what the machine does
// not offer.
var ErrUnsupported = errors.New("sandbox: the machine does not offer the confinement required")

// ErrRefused is a node that a worker without namespaces will not run
// unless TETHER_SANDBOX=off says so (see Admit).
var ErrRefused = errors.New("sandbox: this worker cannot confine the node as it asks")

// ParseMode reads a TETHER_SANDBOX value ("" is ModeAuto).
func ParseMode(s string) (string, error) { return mode.Parse(s) }

// ABI is the kernel's Landlock ABI version; 0 means none (not built in, not
// enabled at boot, or refused by a seccomp filter).
func ABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// Config is how a worker wants its processes confined.
type Config struct {
	// Mode is one of the modes above.
	Mode string
	// Helper is the argv that starts the confine helper: tether-confine,
	// or the worker's own executable and confine.Subcommand.
	Helper []string
	// Bwrap is bubblewrap's path; empty looks it up in PATH.
	Bwrap string
	// RW and RO are paths every confined process may also write, or read
	// and execute (TETHER_SANDBOX_RW, TETHER_SANDBOX_RO).
	RW, RO []string
	// CLIBin is the agent CLIs' bin directory (TETHER_CLI_BIN): a
	// program there, or where its links lead, may run confined, with
	// what an agent is given of the installation (CLIBinReadable).
	CLIBin string
	// Protected are the worker's own directories (its state and work
	// directories): no confined process is given one of them, or a
	// directory that holds one, whatever its paths say.
	Protected []string
	// Services are the worker's own endpoints, never reachable from a
	// confined process.
	Services []egress.Service
	// Cgroup is "auto" (a delegated cgroup v2 subtree where there is
	// one), "off", or the directory visit cgroups are made in
	// (TETHER_CGROUP).
	Cgroup string
	// Limits are the defaults of a node without limits.
	Limits Limits
	// RunDir holds the per-visit sockets and generated files; empty: a
	// private directory under the system's temporary directory.
	RunDir string
	Logger *slog.Logger
}

// Sandbox is how a worker confines the processes it starts. A nil
// *Sandbox runs them unconfined (TETHER_SANDBOX=off).
type Sandbox struct {
	// Helper is the argv that starts the confine helper.
	Helper []string
	// RW and RO are paths every confined process may also write, or read.
	RW, RO []string
	// Level is what is in force; Why says why it is not LevelFull.
	Level Level
	Why   error
	// Defaults are the limits of a node without its own.
	Defaults Limits

	// cli is what a program of the CLI installation is given with it;
	// protected are the real paths of Config.Protected.
	cli       []string
	protected []string

	bwrap   string
	guard   *egress.Guard
	cgroups *cgroupParent
	noCg    error
	runDir  string
	log     *slog.Logger
}

// New builds the sandbox that cfg asks for, probing what the machine
// offers: nil for ModeOff, ErrUnsupported when the mode requires more
// than there is.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	mode, err := ParseMode(cfg.Mode)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if mode == ModeOff {
		return nil, nil
	}
	if len(cfg.Helper) == 0 {
		return nil, fmt.Errorf("sandbox: no helper to confine processes with")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Sandbox{Helper: slices.Clone(cfg.Helper), RW: confine.CleanPaths(cfg.RW), RO: confine.CleanPaths(cfg.RO), Defaults: cfg.Limits.orDefaults(), log: log}
	if cfg.CLIBin != "" {
		s.cli = CLIBinReadable(cfg.CLIBin)
	}
	for _, d := range cfg.Protected {
		if d == "" {
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		s.protected = append(s.protected, realOrSelf(abs))
	}
	for _, d := range append(append(slices.Clone(s.RO), s.RW...), s.cli...) {
		if hasDotDot(d) {
			return nil, fmt.Errorf("%w: %q holds \"..\"; give TETHER_SANDBOX_RO, TETHER_SANDBOX_RW and TETHER_CLI_BIN without it", ErrPath, d)
		}
		if real, err := filepath.EvalSymlinks(d); err == nil {
			if err := s.checkBind(d, real); err != nil {
				return nil, fmt.Errorf("%w (TETHER_SANDBOX_RO, TETHER_SANDBOX_RW, TETHER_CLI_BIN: name directories that hold none of the worker's own)", err)
			}
		}
	}
	if ABI() < 1 {
		s.Why = errors.New("the kernel offers no Landlock (Linux 5.13 or later with landlock in the lsm= boot list)")
	} else {
		s.Level = LevelLandlock
		s.Why = s.probeFull(ctx, cfg)
		if s.Why == nil {
			s.Level = LevelFull
		}
	}
	switch {
	case mode == ModeFull && s.Level < LevelFull:
		return nil, fmt.Errorf("%w: TETHER_SANDBOX=full needs user namespaces, bubblewrap, Landlock and seccomp: %v (install bubblewrap, allow unprivileged user namespaces, or set TETHER_SANDBOX=auto to run with less)", ErrUnsupported, s.Why)
	case mode == ModeLandlock && s.Level < LevelLandlock:
		return nil, fmt.Errorf("%w: TETHER_SANDBOX=landlock: %v (or set TETHER_SANDBOX=off and accept that agents can read what the worker holds)", ErrUnsupported, s.Why)
	}
	if s.Level == LevelFull {
		if s.guard, err = egress.NewGuard(ctx, cfg.Services); err != nil {
			return nil, err
		}
		if s.runDir, err = privateDir(cfg.RunDir); err != nil {
			return nil, err
		}
		// Every visit's egress socket is there.
		s.protected = append(s.protected, realOrSelf(s.runDir))
		s.cgroups, s.noCg = openCgroups(cfg.Cgroup)
	}
	return s, nil
}

// probeFull checks that bwrap runs the helper in every namespace, as a
// non-root user without capabilities, and that the helper confines itself
// there; nil means LevelFull is available.
func (s *Sandbox) probeFull(ctx context.Context, cfg Config) error {
	bw := cfg.Bwrap
	if bw == "" {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			return errors.New("bubblewrap (bwrap) is not installed")
		}
		bw = p
	}
	s.bwrap = bw
	argv, err := s.bwrapArgv(Policy{}, mountPlan{}, nil, confine.Args{Inside: true, Probe: true, Command: []string{"/"}}.Argv())
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bubblewrap cannot make the namespaces here: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if !strings.Contains(string(out), confine.ProbeOK) {
		return fmt.Errorf("the helper did not confine itself inside bubblewrap: %s", strings.TrimSpace(string(out)))
	}
	return nil
}

// String says what is in force, for the worker's log.
func (s *Sandbox) String() string {
	if s == nil {
		return "none (TETHER_SANDBOX=off)"
	}
	str := s.Level.String()
	if s.Level >= LevelLandlock {
		str += fmt.Sprintf(" (Landlock ABI %d)", ABI())
	}
	if s.Level == LevelFull {
		if s.cgroups != nil {
			str += ", a cgroup per visit in " + s.cgroups.dir
		} else {
			str += fmt.Sprintf(", no cgroup per visit (%v): the helper watches a visit's memory, processes are bounded only for an unprivileged worker, no CPU limit", s.noCg)
		}
	}
	return str
}

// Confines reports whether s confines processes at all (a sandbox of
// LevelNone only refuses nodes, see Admit).
func (s *Sandbox) Confines() bool { return s != nil && s.Level > LevelNone }

// ConfinesNetwork reports whether each confined process has a network of
// its own (LevelFull), so that the worker's relays reach it through Unix
// sockets bound into the sandbox; otherwise a process shares the
// worker's network, and reaches a relay on the worker's loopback.
func (s *Sandbox) ConfinesNetwork() bool { return s != nil && s.Level == LevelFull }

// SocketDir makes a private directory, outside everything a confined
// process sees, for a socket the worker binds into a sandbox (the model
// relay's); the caller removes it.
func (s *Sandbox) SocketDir() (string, error) {
	if !s.ConfinesNetwork() {
		return "", fmt.Errorf("sandbox: no private directory without the full sandbox")
	}
	d, err := os.MkdirTemp(s.runDir, "m-")
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	return d, nil
}

// Admit refuses a node that this sandbox cannot confine as the node asks:
// below LevelFull, a node with permissions: full or with its own network
// setting, unless the sandbox is off (a nil s, TETHER_SANDBOX=off).
func (s *Sandbox) Admit(node string, fullPermissions, network bool) error {
	if s == nil || s.Level == LevelFull {
		return nil
	}
	var what string
	switch {
	case fullPermissions:
		what = "permissions: full"
	case network:
		what = "a network: setting"
	default:
		return nil
	}
	return fmt.Errorf("%w: node %s has %s, but this worker runs agents with %s because %v; run it on a worker with user namespaces and bubblewrap, or set TETHER_SANDBOX=off on this one to run it with no confinement at all",
		ErrRefused, node, what, s.Level, s.Why)
}

// Close removes the sandbox's private directory.
func (s *Sandbox) Close() error {
	if s == nil || s.runDir == "" {
		return nil
	}
	return os.RemoveAll(s.runDir)
}

// CacheVars name variables whose value, when a confined process gets one,
// is a cache directory it may write (a tool node's `go test` needs its
// build and module caches).
var CacheVars = []string{"GOCACHE", "GOMODCACHE", "GOPATH", "npm_config_cache", "XDG_CACHE_HOME"}

// ReadVars name variables whose value, when a confined process gets one, is
// a directory it may read (the Go toolchain).
var ReadVars = []string{"GOROOT"}

// EnvPaths are the directories that env (NAME=value entries) names in
// vars, each split like PATH.
func EnvPaths(env []string, vars []string) []string {
	var out []string
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if slices.Contains(vars, name) {
			out = append(out, filepath.SplitList(val)...)
		}
	}
	return out
}

// HideEnviron makes this process non-dumpable: /proc/<pid>/environ, mem,
// maps and fd of the worker become readable only to a process with
// CAP_SYS_PTRACE, so a child running as the same unprivileged user cannot
// read the worker's secrets.
func HideEnviron() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}

// realOrSelf is p with its links followed, or p when it does not resolve.
func realOrSelf(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

// exists reports whether p can be looked up (a rule on a missing path
// fails the whole ruleset).
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// privateDir is dir, or a new directory under the system's temporary
// directory, readable by this user only.
func privateDir(dir string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "tether-sandbox-")
		if err != nil {
			return "", fmt.Errorf("sandbox: %w", err)
		}
		return d, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	return dir, nil
}

// Package sandbox confines the processes a worker starts for a visit (agent
// CLIs and tool nodes) so that they see their run's working directory, their
// own CLI home and scratch space, and read-only system paths: never the
// worker's environment, its store credentials, other runs' directories or
// other processes' memory.
//
// The confinement is Landlock (Linux 5.13 and later), applied by a small
// helper that the worker re-executes (its own binary with Subcommand): the
// helper restricts itself, then execs the program, so the worker stays
// unconfined and every process the program starts inherits the domain.
// Landlock also refuses a confined process ptrace-mode access to any process
// outside its domain, which is what keeps /proc/<pid>/environ of the worker
// and of sibling visits unreadable, even to root.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Modes of confinement, as TETHER_SANDBOX spells them.
const (
	// ModeAuto is Landlock when the kernel has it, else no confinement
	// (the worker says so in its log at start).
	ModeAuto = "auto"
	// ModeLandlock requires Landlock: a worker on a kernel without it
	// refuses to start.
	ModeLandlock = "landlock"
	// ModeOff runs every process unconfined.
	ModeOff = "off"
)

// ErrUnsupported is returned when Landlock is required but the kernel does
// not offer it.
var ErrUnsupported = errors.New("sandbox: the kernel does not offer Landlock")

// ParseMode reads a TETHER_SANDBOX value ("" is ModeAuto).
func ParseMode(s string) (string, error) {
	switch s {
	case "", ModeAuto:
		return ModeAuto, nil
	case ModeLandlock, ModeOff:
		return s, nil
	}
	return "", fmt.Errorf("want %s, %s or %s", ModeLandlock, ModeOff, ModeAuto)
}

// ABI is the kernel's Landlock ABI version; 0 means none (not built in, not
// enabled at boot, or refused by a seccomp filter).
func ABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// Sandbox is how a worker confines the processes it starts. A nil
// *Sandbox runs them unconfined.
type Sandbox struct {
	// Helper is the argv that starts the confine helper (the worker's own
	// executable and Subcommand).
	Helper []string
	// RW and RO are paths every confined process may also write, or read
	// and execute (the operator's TETHER_SANDBOX_RW and TETHER_SANDBOX_RO).
	RW, RO []string
	// Namespaces runs each confined program in a PID and mount namespace
	// of its own, where /proc lists only the visit's processes. New sets
	// it when the machine allows it; NoNamespaces says why not.
	Namespaces   bool
	NoNamespaces error
}

// New returns the sandbox of mode with helper, or nil for ModeOff and for
// ModeAuto on a kernel without Landlock. ModeLandlock on such a kernel is
// ErrUnsupported.
func New(mode string, helper []string, rw, ro []string) (*Sandbox, error) {
	switch mode {
	case ModeOff:
		return nil, nil
	case ModeAuto, "":
		if ABI() < 1 {
			return nil, nil
		}
	case ModeLandlock:
		if ABI() < 1 {
			return nil, fmt.Errorf("%w; TETHER_SANDBOX=landlock needs Linux 5.13 or later with landlock in the lsm= boot list (or set TETHER_SANDBOX=off and accept that agents can read what the worker holds)", ErrUnsupported)
		}
	default:
		return nil, fmt.Errorf("sandbox: unknown mode %q", mode)
	}
	if len(helper) == 0 {
		return nil, fmt.Errorf("sandbox: no helper to confine processes with")
	}
	s := &Sandbox{Helper: slices.Clone(helper), RW: rw, RO: ro}
	s.NoNamespaces = probeNamespaces(s.Helper)
	s.Namespaces = s.NoNamespaces == nil
	return s, nil
}

// String says what is in force, for the worker's log.
func (s *Sandbox) String() string {
	if s == nil {
		return "none"
	}
	if !s.Namespaces {
		return fmt.Sprintf("landlock (ABI %d), no PID namespace (%v)", ABI(), s.NoNamespaces)
	}
	return fmt.Sprintf("landlock (ABI %d) + PID namespace", ABI())
}

// Policy is what one confined process may reach besides the system paths
// (SystemPaths): RW paths it may read, write and execute, RO paths it may
// read and execute.
type Policy struct {
	RW, RO []string
	// Tmp, with namespaces, is mounted on /tmp for the program.
	Tmp string
}

// Command is the argv that runs path with args under s, confined to p and
// to the sandbox's own extra paths: the helper, its flags, "--", then the
// program.
func (s *Sandbox) Command(p Policy, path string, args []string) []string {
	argv := slices.Clone(s.Helper)
	if s.Namespaces {
		argv = append(argv, "--ns")
		if p.Tmp != "" {
			argv = append(argv, "--tmp", p.Tmp)
		}
	}
	for _, d := range clean(append(slices.Clone(p.RW), s.RW...)) {
		argv = append(argv, "--rw", d)
	}
	for _, d := range clean(append(slices.Clone(p.RO), s.RO...)) {
		argv = append(argv, "--ro", d)
	}
	argv = append(argv, "--", path)
	return append(argv, args...)
}

// clean drops empty and relative paths and duplicates, keeping order.
func clean(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		if p = filepath.Clean(p); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
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
// read the worker's secrets. Root keeps the capability; that case is what
// Landlock covers.
func HideEnviron() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}

// exists reports whether p can be looked up (a rule on a missing path
// fails the whole ruleset).
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

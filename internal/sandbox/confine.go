package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// Subcommand is the worker's hidden subcommand that confines itself and
// execs a program: `tether-worker confine [--rw PATH]... [--ro PATH]... --
// PROGRAM [ARG]...`.
const Subcommand = "confine"

// ExitConfine is the helper's exit status when it could not confine itself
// or exec the program: the program never ran.
const ExitConfine = 126

// SystemPaths are what every confined process may read and execute: the
// system's programs and libraries, and /proc and /sys, which a process
// needs about itself (Landlock keeps other processes' private files in
// /proc out of reach). /etc is added entry by entry, without etcDenied.
var SystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/sys"}

// etcDenied are the entries of /etc no confined process may read: password
// hashes, sudo rules, SSH host keys, TLS private keys.
var etcDenied = []string{"shadow", "shadow-", "gshadow", "gshadow-", "sudoers", "sudoers.d", "ssh", "security", "ssl/private"}

// devFiles are the device files a confined process may read and write.
var devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// Main is the confine subcommand: it restricts itself to the system paths
// and the paths its flags name, then replaces itself with the program. It
// returns only on failure, with ExitConfine.
func Main(args []string) int {
	if err := confine(args); err != nil {
		fmt.Fprintln(os.Stderr, "tether-worker confine:", err)
		return ExitConfine
	}
	return 0
}

func confine(args []string) error {
	var rw, ro []string
	init, ns := false, false
	for len(args) > 0 && args[0] != "--" {
		if args[0] == "--init" || args[0] == "--ns" {
			init, ns = init || args[0] == "--init", ns || args[0] == "--ns"
			args = args[1:]
			continue
		}
		if len(args) < 2 || (args[0] != "--rw" && args[0] != "--ro") {
			return fmt.Errorf("usage: %s [--ns] [--rw PATH]... [--ro PATH]... -- PROGRAM [ARG]...", Subcommand)
		}
		if args[0] == "--rw" {
			rw = append(rw, args[1])
		} else {
			ro = append(ro, args[1])
		}
		args = args[2:]
	}
	if len(args) < 2 {
		return fmt.Errorf("no program after --")
	}
	prog, argv := args[1], args[1:]
	if !filepath.IsAbs(prog) {
		return fmt.Errorf("program %q: want an absolute path", prog)
	}
	if ns {
		var rest []string
		for _, d := range rw {
			rest = append(rest, "--rw", d)
		}
		for _, d := range ro {
			rest = append(rest, "--ro", d)
		}
		code, err := runInNamespaces(append(append(rest, "--"), argv...))
		if err != nil {
			return err
		}
		os.Exit(code)
	}
	if init {
		// First process of a new PID and mount namespace: a /proc of its
		// own lists only the visit's processes.
		if err := mountProc(); err != nil {
			return err
		}
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := Restrict(rw, ro); err != nil {
		return err
	}
	if init {
		code, err := runAsInit(prog, argv)
		if err != nil {
			return err
		}
		os.Exit(code)
	}
	err := syscall.Exec(prog, argv, os.Environ())
	return fmt.Errorf("exec %s: %w", prog, err)
}

// Restrict confines the calling process, and everything it starts from now
// on, to the system paths, rw (read, write, execute) and ro (read,
// execute). Paths that do not exist are left out. It fails, rather than
// leave the process unconfined, on a kernel without Landlock.
func Restrict(rw, ro []string) error {
	if ABI() < 1 {
		return fmt.Errorf("%w: refusing to run the program unconfined", ErrUnsupported)
	}
	var rules []landlock.Rule
	add := func(paths []string, write bool) {
		for _, p := range clean(paths) {
			st, err := os.Stat(p)
			if err != nil {
				continue
			}
			switch {
			case st.IsDir() && write:
				rules = append(rules, landlock.RWDirs(p).WithRefer())
			case st.IsDir():
				rules = append(rules, landlock.RODirs(p))
			case write:
				rules = append(rules, landlock.RWFiles(p))
			default:
				rules = append(rules, landlock.ROFiles(p))
			}
		}
	}
	add(SystemPaths, false)
	add(etcPaths(), false)
	add(ro, false)
	add(rw, true)
	for _, d := range devFiles {
		if exists(d) {
			rules = append(rules, landlock.RWFiles(d).WithIoctlDev())
		}
	}
	if exists("/dev/pts") {
		rules = append(rules, landlock.RWDirs("/dev/pts").WithIoctlDev())
	}
	// The filesystem, and then IPC scopes (signals and abstract UNIX
	// sockets reach only processes inside the domain; ABI 6 and later).
	// BestEffort takes what the kernel offers beyond ABI 1.
	cfg := landlock.V7.BestEffort()
	if err := cfg.RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := cfg.RestrictScoped(); err != nil {
		return fmt.Errorf("landlock scopes: %w", err)
	}
	return nil
}

// etcPaths are the entries of /etc a confined process may read: all but
// etcDenied (one level down for a denied path such as ssl/private).
func etcPaths() []string {
	var out []string
	var walk func(dir, rel string)
	walk = func(dir, rel string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			r := filepath.Join(rel, e.Name())
			if slices.Contains(etcDenied, r) {
				continue
			}
			if e.IsDir() && deniedBelow(r) {
				walk(filepath.Join(dir, e.Name()), r)
				continue
			}
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	walk("/etc", "")
	return out
}

// deniedBelow reports whether a denied entry lies inside rel.
func deniedBelow(rel string) bool {
	for _, d := range etcDenied {
		if len(d) > len(rel) && d[:len(rel)+1] == rel+"/" {
			return true
		}
	}
	return false
}

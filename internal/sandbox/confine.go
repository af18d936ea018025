package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
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
	// confine returns only when the program could not be started.
	fmt.Fprintln(os.Stderr, "tether-worker confine:", confine(args))
	return ExitConfine
}

func confine(args []string) error {
	// Capability sets and the bounding set belong to a thread: dropping
	// them, and the exec that must inherit the drop, happen on one.
	runtime.LockOSThread()
	var rw, ro []string
	var tmp string
	init, ns := false, false
	for len(args) > 0 && args[0] != "--" {
		if args[0] == "--init" || args[0] == "--ns" {
			init, ns = init || args[0] == "--init", ns || args[0] == "--ns"
			args = args[1:]
			continue
		}
		if len(args) < 2 || (args[0] != "--rw" && args[0] != "--ro" && args[0] != "--tmp") {
			return fmt.Errorf("usage: %s [--ns] [--tmp DIR] [--rw PATH]... [--ro PATH]... -- PROGRAM [ARG ...]", Subcommand)
		}
		switch args[0] {
		case "--rw":
			rw = append(rw, args[1])
		case "--ro":
			ro = append(ro, args[1])
		default:
			tmp = args[1]
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
		if tmp != "" {
			rest = append(rest, "--tmp", tmp)
		}
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
		// Some programs write to /tmp whatever TMPDIR says (Codex's
		// sandbox does): they get the visit's own.
		if tmp != "" {
			if err := privateTmp(tmp, rw, ro); err != nil {
				return err
			}
			rw = append(rw, tmp)
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

// privateTmp mounts dir on /tmp, then mounts back, at their own paths, the
// entries of rw and ro that lay under the old /tmp (the visit's own
// directories often do), so that the program sees a /tmp of its own and
// still every path it was given. Landlock grants what is below a mount
// point what its parent has (dir is writable), so the ro entries are
// mounted read-only.
func privateTmp(dir string, rw, ro []string) error {
	type kept struct {
		path    string
		fd      int
		dir, ro bool
	}
	var ks []kept
	keep := append(append([]string(nil), rw...), ro...)
	for i, p := range keep {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if !strings.HasPrefix(p, "/tmp/") {
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		ks = append(ks, kept{p, fd, st.IsDir(), i >= len(rw) && !slices.Contains(clean(rw), p)})
	}
	// Parents before children: a child is mounted inside its parent's
	// mount.
	slices.SortFunc(ks, func(a, b kept) int { return len(a.path) - len(b.path) })
	if err := unix.Mount(dir, "/tmp", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s on /tmp: %w", dir, err)
	}
	for _, k := range ks {
		if k.dir {
			if err := os.MkdirAll(k.path, 0o700); err != nil {
				return fmt.Errorf("mount point %s: %w", k.path, err)
			}
		} else {
			if err := os.MkdirAll(filepath.Dir(k.path), 0o700); err != nil {
				return fmt.Errorf("mount point %s: %w", k.path, err)
			}
			f, err := os.OpenFile(k.path, os.O_CREATE|os.O_RDONLY, 0o600)
			if err != nil {
				return fmt.Errorf("mount point %s: %w", k.path, err)
			}
			f.Close()
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", k.fd), k.path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s back: %w", k.path, err)
		}
		if k.ro {
			if err := unix.Mount("", k.path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("make %s read-only: %w", k.path, err)
			}
		}
		unix.Close(k.fd)
	}
	return nil
}

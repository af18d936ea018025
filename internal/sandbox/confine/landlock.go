package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// restrict confines the calling process, and everything it starts from now
// on, to the system paths, rw (read, write, execute) and ro (read,
// execute). Paths that do not exist are left out. It fails, rather than
// leave the process unconfined, on a kernel without Landlock. inside says
// the process is in the sandbox's own namespaces, where /dev/pts and
// /dev/shm are its own; outside them they are the machine's and stay out
// of reach.
func restrict(rw, ro []string, inside bool) error {
	if v, err := llsys.LandlockGetABIVersion(); err != nil || v < 1 {
		return errors.New("the kernel offers no Landlock: refusing to run the program unconfined")
	}
	var rules []landlock.Rule
	add := func(paths []string, write bool) {
		for _, p := range CleanPaths(paths) {
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
	add([]string{"/proc"}, false)
	add(SysPaths, false)
	if !inside {
		add([]string{"/sys"}, false)
	}
	add(ro, false)
	add(rw, true)
	devs := slices.Clone(devFiles)
	if inside {
		devs = append(devs, "/dev/ptmx")
		add([]string{"/dev/shm"}, true)
		if exists("/dev/pts") {
			rules = append(rules, landlock.RWDirs("/dev/pts").WithIoctlDev())
		}
	}
	for _, d := range devs {
		if exists(d) {
			rules = append(rules, landlock.RWFiles(d).WithIoctlDev())
		}
	}
	// The filesystem, and then, outside namespaces, IPC scopes (signals
	// and abstract UNIX sockets reach only processes inside the domain;
	// ABI 6 and later). Inside, the PID and network namespaces scope both
	// already, and the helper, whose threads each restrict themselves
	// into a domain of their own, must still signal the program it
	// started from another thread. BestEffort takes what the kernel
	// offers beyond ABI 1.
	cfg := landlock.V7.BestEffort()
	if err := cfg.RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if inside {
		return nil
	}
	if err := cfg.RestrictScoped(); err != nil {
		return fmt.Errorf("landlock scopes: %w", err)
	}
	return nil
}

// etcPaths are the entries of /etc a confined process may read: all but
// EtcDenied (one level down for a denied path such as ssl/private).
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
			if slices.Contains(EtcDenied, r) {
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
	for _, d := range EtcDenied {
		if len(d) > len(rel) && d[:len(rel)+1] == rel+"/" {
			return true
		}
	}
	return false
}

// dropCapabilities empties the bounding set (so that a root program gets
// nothing back at exec), the ambient set and the helper's own sets. Without
// CAP_SETPCAP the bounding set cannot be changed, and then exec grants a
// non-root program nothing from it anyway.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	for c := 0; c <= lastCap(); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// lastCap is the kernel's highest capability number.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	n := 0
	if err == nil {
		for _, c := range b {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
	}
	if n <= 0 {
		return unix.CAP_LAST_CAP
	}
	return n
}

// CleanPaths drops empty and relative paths and duplicates, keeping
// order: the paths a sandbox grants, on the worker side and here.
func CleanPaths(paths []string) []string {
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

// exists reports whether p can be looked up (a rule on a missing path
// fails the whole ruleset).
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// UID and GID are who a confined process is inside its user namespace
// (LevelFull), whoever the worker is: never root.
const (
	UID = 1000
	GID = 1000
)

// Paths inside the sandbox.
const (
	// EgressSocket is where the visit's egress proxy is bound.
	EgressSocket = "/run/tether/egress.sock"
	// ModelSocket is where the visit's model relay is bound.
	ModelSocket = "/run/tether/model.sock"
	hostname    = "tether"
)

// SystemPaths are what every confined process may read and execute: the
// system's programs and libraries. /etc is added without etcDenied; /proc
// and /dev are the sandbox's own (LevelFull) or the machine's (Landlock).
var SystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// sysPaths are parts of /sys a confined process may read: the CPU
// topology, which runtimes read to size their thread pools.
var sysPaths = []string{"/sys/devices/system/cpu"}

// etcDenied are the entries of /etc no confined process may read: password
// hashes, sudo rules, SSH host keys, TLS private keys.
var etcDenied = []string{"shadow", "shadow-", "gshadow", "gshadow-", "sudoers", "sudoers.d", "ssh", "security", "ssl/private"}

// launchFiles are the files bwrap binds into one sandbox that the worker
// makes for it: its user and group entries, its hosts file and the egress
// proxy's socket.
type launchFiles struct {
	passwd, group, hosts, socket, model string
}

// bwrapArgv is the argv that runs the helper with inner (its flags, "--",
// the program) under bubblewrap, with policy p's paths bound, and f's files
// (none for the probe).
func (s *Sandbox) bwrapArgv(p Policy, f *launchFiles, inner []string) ([]string, error) {
	a := []string{s.bwrap,
		// Every namespace but the network's, which the helper makes
		// itself: one bwrap made would belong to the user namespace
		// bwrap sets up in before it switches to the sandbox's uid (a
		// nested one), where the helper could not bind its relays to
		// privileged ports nor bring the loopback up.
		"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--as-pid-1",
		// For the helper only, which makes the network namespace, binds
		// its relays, then drops every capability (bounding set
		// included) before the program starts.
		"--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_NET_ADMIN",
		"--cap-add", "CAP_NET_BIND_SERVICE", "--cap-add", "CAP_SETPCAP",
		"--uid", fmt.Sprint(UID), "--gid", fmt.Sprint(GID), "--hostname", hostname,
	}
	if f != nil {
		a = append(a, "--info-fd", "3")
	}
	for _, d := range SystemPaths {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
		case st.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
			a = append(a, "--symlink", target, d)
		case st.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	a = append(a, "--ro-bind", "/etc", "/etc")
	for _, e := range etcDenied {
		p := filepath.Join("/etc", e)
		st, err := os.Lstat(p)
		switch {
		case err != nil:
		case st.IsDir():
			a = append(a, "--tmpfs", p, "--remount-ro", p)
		default:
			a = append(a, "--ro-bind", "/dev/null", p)
		}
	}
	if f != nil {
		a = append(a, "--ro-bind", f.passwd, "/etc/passwd", "--ro-bind", f.group, "/etc/group", "--ro-bind", f.hosts, "/etc/hosts")
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev")
	for _, d := range sysPaths {
		a = append(a, "--ro-bind-try", d, d)
	}
	if p.Tmp != "" {
		a = append(a, "--bind", p.Tmp, "/tmp")
	} else {
		a = append(a, "--tmpfs", "/tmp")
	}
	if f != nil && f.socket != "" {
		a = append(a, "--ro-bind", f.socket, EgressSocket)
	}
	if f != nil && f.model != "" {
		a = append(a, "--ro-bind", f.model, ModelSocket)
	}
	helper, err := filepath.EvalSymlinks(s.Helper[0])
	if err != nil {
		return nil, fmt.Errorf("sandbox: the helper %s: %w", s.Helper[0], err)
	}
	a = append(a, "--ro-bind", helper, helper)
	binds, aliases := mounts(p)
	for _, b := range binds {
		flag := "--ro-bind"
		if b.rw {
			flag = "--bind"
		}
		a = append(a, flag, b.path, b.path)
	}
	for _, al := range aliases {
		a = append(a, "--symlink", al[1], al[0])
	}
	if p.Dir != "" {
		a = append(a, "--chdir", p.Dir)
	}
	a = append(a, "--", helper)
	a = append(a, s.Helper[1:]...)
	return append(a, inner...), nil
}

type bind struct {
	path string
	rw   bool
}

// mounts are the binds that give p's paths, each at its real path, parents
// before children, and the symlinks (link, target) that make each path as
// it was given lead there: a relative link inside (node_modules/.bin) then
// resolves as it does outside.
//
// A path is re-made link by link: each symlink met while resolving it
// becomes one alias, so two paths behind one linked directory (a CLI
// folder reached through a linked .tools) share its alias instead of
// each making the folder again, which bubblewrap refuses ("File exists").
// A link inside a bound directory, or a system one, is already there.
func mounts(p Policy) ([]bind, [][2]string) {
	var binds []bind
	var links [][2]string
	add := func(path string, rw bool) {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return
		}
		for _, l := range linksOf(path) {
			if !underSystem(l[0]) && !slices.ContainsFunc(links, func(a [2]string) bool { return a[0] == l[0] }) {
				links = append(links, l)
			}
		}
		if underSystem(real) && !rw {
			return
		}
		for i, b := range binds {
			if b.path == real {
				binds[i].rw = b.rw || rw
				return
			}
		}
		binds = append(binds, bind{real, rw})
	}
	for _, d := range clean(p.RO) {
		add(d, false)
	}
	for _, d := range clean(p.RW) {
		add(d, true)
	}
	slices.SortStableFunc(binds, func(a, b bind) int { return strings.Count(a.path, "/") - strings.Count(b.path, "/") })
	aliases := links[:0]
	for _, l := range links {
		if !slices.ContainsFunc(binds, func(b bind) bool { return within(l[0], b.path) }) {
			aliases = append(aliases, l)
		}
	}
	slices.SortStableFunc(aliases, func(a, b [2]string) int { return strings.Count(a[0], "/") - strings.Count(b[0], "/") })
	return binds, aliases
}

// linksOf are the symlinks met resolving the absolute path, in order,
// each as (link, its real target); none for a path that does not resolve.
func linksOf(path string) [][2]string {
	var links [][2]string
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	at := "/"
	for hops := 0; len(rest) > 0 && hops < 255; hops++ {
		next := filepath.Join(at, rest[0])
		rest = rest[1:]
		st, err := os.Lstat(next)
		if err != nil {
			return links
		}
		if st.Mode()&os.ModeSymlink == 0 {
			at = next
			continue
		}
		real, err := filepath.EvalSymlinks(next)
		if err != nil {
			return links
		}
		links = append(links, [2]string{next, real})
		at = real
	}
	return links
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// underSystem reports whether p lies in a system path, already bound
// read-only.
func underSystem(p string) bool {
	for _, d := range SystemPaths {
		if within(p, d) {
			return true
		}
	}
	return false
}

// writeLaunchFiles makes, in dir, the user and group entries of the
// sandbox's user (with home), and the hosts file that maps names to the
// loopback addresses their relays listen on.
func writeLaunchFiles(dir, home string, hosts []hostEntry) (*launchFiles, error) {
	if home == "" {
		home = "/tmp"
	}
	f := &launchFiles{passwd: filepath.Join(dir, "passwd"), group: filepath.Join(dir, "group"), hosts: filepath.Join(dir, "hosts")}
	var h strings.Builder
	h.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + hostname + "\n")
	for _, e := range hosts {
		fmt.Fprintf(&h, "%s\t%s\n", e.addr, e.name)
	}
	for name, body := range map[string]string{
		f.passwd: fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\ntether:x:%d:%d:tether:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", UID, GID, home),
		f.group:  fmt.Sprintf("root:x:0:\ntether:x:%d:\nnogroup:x:65534:\n", GID),
		f.hosts:  h.String(),
	} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	return f, nil
}

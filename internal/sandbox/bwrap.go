package sandbox

import (
	"errors"
	"fmt"
	"github.com/tether-run/tether/internal/sandbox/confine"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

// launchFiles are the files bwrap binds into one sandbox that the worker
// makes for it: its user and group entries, its hosts file and the egress
// proxy's socket.
type launchFiles struct {
	passwd, group, hosts, socket, model string
}

// bwrapArgv is the argv that runs the helper with inner (its flags, "--",
// the program) under bubblewrap, with the binds and aliases m of a
// policy's paths (mounts), p's /tmp and working directory, and f's files
// (none for the probe).
func (s *Sandbox) bwrapArgv(p Policy, m mountPlan, f *launchFiles, inner []string) ([]string, error) {
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
	for _, d := range confine.SystemPaths {
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
	for _, e := range confine.EtcDenied {
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
	for _, d := range confine.SysPaths {
		a = append(a, "--ro-bind-try", d, d)
	}
	// /tmp is the visit's own, in memory and bounded: a program that
	// fills it gets "no space left on device", and the worker's disk
	// never sees it.
	if p.Limits.DiskBytes > 0 {
		a = append(a, "--size", strconv.FormatInt(p.Limits.DiskBytes, 10))
	}
	a = append(a, "--tmpfs", "/tmp")
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
	for _, b := range m.binds {
		flag := "--ro-bind"
		if b.rw {
			flag = "--bind"
		}
		a = append(a, flag, b.path, b.path)
	}
	for _, al := range m.aliases {
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

// mountPlan is how a policy's paths appear inside the sandbox: binds,
// parents before children, each at its real path, and the symlinks
// (link, target) that make each path as it was given lead there.
type mountPlan struct {
	binds   []bind
	aliases [][2]string
}

// ErrPath is a path a policy gives that the sandbox will not bind.
var ErrPath = errors.New("sandbox: a path the sandbox will not give a confined process")

// paths are the read-only and read-write paths of p (with the sandbox's
// own extra paths) that need a place of their own in the sandbox: a path
// that lies, by its text, in another one the process gets is left out,
// since it is reached through that one. Its text may lead anywhere (a
// link a visit planted in its state root or workspace, where a variable
// such as XDG_CACHE_HOME points): inside the sandbox it resolves against
// what the sandbox shows, and outside it must never become a bind of
// its own. Only a path read-write below a read-only one keeps its place,
// and only while it really lies there. A path whose text holds ".." is
// refused: the kernel resolves ".." after the links before it, not as
// the text reads.
func (s *Sandbox) paths(p Policy) (ro, rw []string, err error) {
	var order []string
	writable := map[string]bool{}
	for _, group := range []struct {
		paths []string
		rw    bool
	}{{p.RO, false}, {s.RO, false}, {p.RW, true}, {s.RW, true}} {
		for _, d := range group.paths {
			if d == "" || !filepath.IsAbs(d) {
				continue
			}
			if hasDotDot(d) {
				return nil, nil, fmt.Errorf("%w: %q holds \"..\", which the kernel resolves after the links before it rather than as the text reads", ErrPath, d)
			}
			d = filepath.Clean(d)
			if _, seen := writable[d]; !seen {
				order = append(order, d)
			}
			writable[d] = writable[d] || group.rw
		}
	}
	for _, d := range order {
		keep := true
		for _, o := range order {
			if o == d || !within(d, o) {
				continue
			}
			if writable[o] || !writable[d] {
				keep = false
				break
			}
			// Read-write below a read-only path: a bind of its own, if
			// it really lies there.
			real, err1 := filepath.EvalSymlinks(d)
			oreal, err2 := filepath.EvalSymlinks(o)
			if err1 != nil || err2 != nil || !within(real, oreal) {
				keep = false
				break
			}
		}
		switch {
		case !keep:
		case writable[d]:
			rw = append(rw, d)
		default:
			ro = append(ro, d)
		}
	}
	return ro, rw, nil
}

// mounts are the binds and aliases that give the paths ro and rw (from
// paths), each at its real path, parents before children. A path that
// leads to the root, or to a directory that holds one of the worker's own
// (Config.Protected: its state and work directories), is refused.
//
// A path is re-made link by link: each symlink met while resolving it
// becomes one alias, so two paths behind one linked directory (a CLI
// folder reached through a linked .tools) share its alias instead of
// each making the folder again, which bubblewrap refuses ("File exists").
// A relative link inside (node_modules/.bin) then resolves as it does
// outside. A link inside a bound directory, or a system one, is already
// there.
func (s *Sandbox) mounts(ro, rw []string) (mountPlan, error) {
	var m mountPlan
	var links [][2]string
	add := func(path string, rw bool) error {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil
		}
		if err := s.checkBind(path, real); err != nil {
			return err
		}
		for _, l := range linksOf(path) {
			if !underSystem(l[0]) && !slices.ContainsFunc(links, func(a [2]string) bool { return a[0] == l[0] }) {
				links = append(links, l)
			}
		}
		if underSystem(real) && !rw {
			return nil
		}
		for i, b := range m.binds {
			if b.path == real {
				m.binds[i].rw = b.rw || rw
				return nil
			}
		}
		m.binds = append(m.binds, bind{real, rw})
		return nil
	}
	for _, d := range ro {
		if err := add(d, false); err != nil {
			return m, err
		}
	}
	for _, d := range rw {
		if err := add(d, true); err != nil {
			return m, err
		}
	}
	slices.SortStableFunc(m.binds, func(a, b bind) int { return strings.Count(a.path, "/") - strings.Count(b.path, "/") })
	for _, l := range links {
		if !slices.ContainsFunc(m.binds, func(b bind) bool { return within(l[0], b.path) }) {
			m.aliases = append(m.aliases, l)
		}
	}
	slices.SortStableFunc(m.aliases, func(a, b [2]string) int { return strings.Count(a[0], "/") - strings.Count(b[0], "/") })
	return m, nil
}

// checkBind refuses to bind real (where path leads): the root, or a
// directory that is or holds one of the worker's protected directories.
func (s *Sandbox) checkBind(path, real string) error {
	if real == "/" {
		return fmt.Errorf("%w: %s leads to /, the whole of the machine", ErrPath, path)
	}
	for _, d := range s.protected {
		if within(d, real) {
			return fmt.Errorf("%w: %s leads to %s, which holds the worker's %s", ErrPath, path, real, d)
		}
	}
	return nil
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
	for _, d := range confine.SystemPaths {
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

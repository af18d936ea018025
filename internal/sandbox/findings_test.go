package sandbox

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tether-run/tether/internal/egress"
	"github.com/tether-run/tether/internal/hostport"
	"github.com/tether-run/tether/internal/testenv"
)

// Each test here is one finding of the attack on the sandbox that came
// before this one (docs/security.md, "Attack table"): the attack runs in
// a real confined process, and where the old confinement (Landlock alone,
// which a machine without namespaces still gets) let it through, the same
// attack runs there too, to show the test can tell.

// serviceConns counts connections to the stand-in for the worker's
// Temporal frontend.
var serviceConns atomic.Int64

// serviceAddr starts, once, a listener that stands for one of the
// worker's services, and declares it as such.
func serviceAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	testenv.CountAccepts(l, &serviceConns)
	testServices = append(testServices, egress.Service{Name: "Temporal frontend", Addr: l.Addr().String()})
	return l.Addr().String()
}

var temporalAddr = serviceAddr()

func self(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	require.NoError(t, err)
	return p
}

// A confined process has a network of its own: nothing is reachable but
// what its node allows, through the egress proxy, and never the worker's
// services or a metadata address, even when a pattern matches them; each
// refusal is noted, without data.
func TestNetworkIsTheNodesOnly(t *testing.T) {
	sb := full(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "HELLO-FROM-ALLOWED") }))
	t.Cleanup(site.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "OTHER-LOCAL-SERVICE") }))
	t.Cleanup(other.Close)
	siteAddr, otherAddr := site.Listener.Addr().String(), other.Listener.Addr().String()
	me := self(t)
	probe := func(what, arg string) string { return me + " " + probeCommand + " " + what + " " + arg + "\n" }
	before := serviceConns.Load()

	t.Run("none", func(t *testing.T) {
		r := confined(t, sb, Policy{}, probe("tcp", siteAddr)+probe("tcp", temporalAddr)+probe("tcp", "1.1.1.1:443")+`echo "proxy=$HTTPS_PROXY"`)
		assert.Equal(t, 0, r.code, r.out)
		assert.Contains(t, r.out, "tcp=dial tcp "+siteAddr+": connect: connection refused")
		assert.Contains(t, r.out, "network is unreachable", "nothing outside: only a loopback")
		assert.NotContains(t, r.out, "tcp=ok")
		assert.Contains(t, r.out, "proxy=\n", "no proxy without an allowlist")
		assert.Empty(t, r.refused)
	})

	t.Run("allow", func(t *testing.T) {
		allow := hostport.MustParsePatterns(siteAddr, "127.0.0.1:*", temporalAddr, "*.example.com:443")
		r := confined(t, sb, Policy{Allow: allow}, probe("get", "http://"+siteAddr+"/")+
			probe("proxy", siteAddr)+
			probe("proxy", temporalAddr)+
			probe("proxy", otherAddr)+
			probe("proxy", "169.254.169.254:80")+
			probe("proxy", "unlisted.invalid:443")+
			probe("get", "http://"+temporalAddr+"/"))
		assert.Equal(t, 0, r.code, r.out)
		assert.Contains(t, r.out, "get=status 200 body HELLO-FROM-ALLOWED", "the allowed server is reached by its own address")
		assert.Contains(t, r.out, "proxy=status 200", "and through the proxy")
		assert.Contains(t, r.out, "proxy=status 403 tether egress: "+temporalAddr+" refused: the worker's Temporal frontend")
		assert.Contains(t, r.out, "proxy=status 403 tether egress: "+otherAddr+" refused: a loopback or local address")
		assert.Contains(t, r.out, "proxy=status 403 tether egress: 169.254.169.254:80 refused: not in the node's network allowlist")
		assert.Contains(t, r.out, "unlisted.invalid:443 refused: not in the node's network allowlist")
		assert.NotContains(t, r.out, "OTHER-LOCAL-SERVICE")
		assert.Contains(t, r.refused, "CONNECT "+temporalAddr+" refused: the worker's Temporal frontend")
		assert.Contains(t, r.refused, "CONNECT 169.254.169.254:80 refused: not in the node's network allowlist")
		for _, n := range r.refused {
			assert.NotContains(t, n, "HELLO", "a note says what was refused, never data")
		}
	})

	t.Run("metadata-even-when-allowed", func(t *testing.T) {
		r := confined(t, sb, Policy{Allow: hostport.MustParsePatterns("*:*", "169.254.169.254:80")}, probe("proxy", "169.254.169.254:80")+probe("proxy", "[fe80::1]:80"))
		assert.Equal(t, 0, r.code, r.out)
		assert.Equal(t, 2, strings.Count(r.out, "refused: a link-local or cloud metadata address"), r.out)
	})
	assert.Equal(t, before, serviceConns.Load(), "no connection reached the worker's service")
}

// Finding 2: a confined root process kept CAP_NET_RAW and captured other
// runs' traffic with a packet socket on lo.
func TestNoRawSocketsNoCapabilitiesNotRoot(t *testing.T) {
	me := self(t)
	script := fmt.Sprintf(`%[1]s %[2]s packet
%[1]s %[2]s raw
%[1]s %[2]s setuid
%[1]s %[2]s fifo
%[1]s %[2]s userns
echo "uid=$(id -u)"
grep -E '^(Cap|NoNewPrivs)' /proc/self/status
`, me, probeCommand)
	r := confined(t, full(t), Policy{RO: []string{me}}, script)
	assert.Equal(t, 0, r.code, r.out)
	for _, p := range []string{"packet", "raw", "fifo", "userns"} {
		assert.Contains(t, r.out, p+"=operation not permitted", r.out)
	}
	// Only the sandbox's own uid exists in its user namespace.
	assert.Regexp(t, `setuid=(operation not permitted|invalid argument)`, r.out)
	assert.Contains(t, r.out, fmt.Sprintf("uid=%d", UID), "never root inside, also when the worker is")
	for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		assert.Contains(t, r.out, c+":\t0000000000000000", "an empty capability set")
	}
	assert.Contains(t, r.out, "NoNewPrivs:\t1")
	if os.Geteuid() == 0 {
		// The control: outside the sandbox a root process opens one.
		assert.NoError(t, probe("packet", ""), "as root, outside the sandbox, a packet socket opens (the attack)")
	}
}

// Findings 3 and 4: the CLI kept the worker's terminal and pushed keys
// into it with TIOCSTI; a tool opened another user's /dev/pts/0.
func TestNoTerminal(t *testing.T) {
	me := self(t)
	// A terminal of the host, standing for an operator's.
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(m) })
	require.NoError(t, unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	require.NoError(t, err)
	hostPts := "/dev/pts/" + strconv.Itoa(n)
	slave, err := os.OpenFile(hostPts, os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { slave.Close() })

	script := fmt.Sprintf(`%[1]s %[2]s tiocsti
%[1]s %[2]s tiocllinux
%[1]s %[2]s open %[3]s
%[1]s %[2]s open /dev/tty
echo "pts=$(ls /dev/pts | tr '\n' ' ')"
echo "session=$(cut -d' ' -f6,7 /proc/self/stat)"
`, me, probeCommand, hostPts)
	r := confined(t, full(t), Policy{RO: []string{me}}, script)
	assert.Equal(t, 0, r.code, r.out)
	assert.Contains(t, r.out, "tiocsti=operation not permitted", "TIOCSTI is refused even on the sandbox's own terminal")
	assert.Contains(t, r.out, "tiocllinux=operation not permitted")
	assert.NotContains(t, r.out, "open=ok", "neither the host's terminal nor /dev/tty opens")
	assert.Regexp(t, `pts=ptmx \n`, r.out, "a fresh devpts: no terminal of the host")
	assert.Regexp(t, `session=\d+ 0\n`, r.out, "no controlling terminal")

	// The terminal handed to the process itself (as the worker's own was
	// inherited): TIOCSTI on it is refused too.
	v := &Visit{}
	l, err := full(t).Launch(Policy{RO: []string{me}}, me, []string{probeCommand, "tiocsti-fd", "0"}, os.Environ(), v)
	require.NoError(t, err)
	out, code := runLaunch(t, l, slave)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "tiocsti-fd=operation not permitted")

	// The control: Landlock alone, as root, reached the host's terminal.
	if os.Geteuid() == 0 {
		ll := confined(t, &Sandbox{Helper: full(t).Helper, Level: LevelNone}, Policy{}, fmt.Sprintf("%s %s open %s", me, probeCommand, hostPts))
		assert.Contains(t, ll.out, "open=ok", "unconfined, the host's terminal opens (the attack)")
	}
}

// Finding 6 (LOW) of the attack on this sandbox: netlink and vsock
// sockets could be made, a wide surface of the kernel that no agent CLI
// or tool needs (the routing, socket-diagnostics, uevent and audit
// interfaces; a hypervisor's). The filter refuses every kind, under both
// levels; outside, as the control, a netlink socket opens.
func TestNoNetlinkNoVsock(t *testing.T) {
	me := self(t)
	for _, lv := range levels(t) {
		t.Run(lv.name, func(t *testing.T) {
			r := confined(t, lv.sb, Policy{RO: []string{me}}, fmt.Sprintf("%[1]s %[2]s netlink\n%[1]s %[2]s vsock\n", me, probeCommand))
			assert.Equal(t, 0, r.code, r.out)
			assert.Contains(t, r.out, "netlink=operation not permitted")
			assert.Contains(t, r.out, "vsock=operation not permitted")
		})
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	require.NoError(t, err, "outside the sandbox a netlink socket opens (the attack)")
	unix.Close(fd)
}

// Finding 5: Landlock refused to list /var/tmp, yet connect() to a
// pathname socket there worked.
func TestHostSocketsDoNotExist(t *testing.T) {
	me := self(t)
	dir := testenv.NobodyTempDir(t)
	sock := filepath.Join(dir, "victim.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	require.NoError(t, os.Chmod(sock, 0o777))
	var accepted atomic.Int64
	testenv.CountAccepts(l, &accepted)
	r := confined(t, full(t), Policy{RO: []string{me}}, me+" "+probeCommand+" unix "+sock)
	assert.Contains(t, r.out, "unix=dial unix "+sock+": connect: no such file or directory", r.out)
	assert.Zero(t, accepted.Load())
	// The control: under Landlock alone the socket answers (the attack).
	ll := confined(t, landlockOnlySandbox(t), Policy{RO: []string{me}}, me+" "+probeCommand+" unix "+sock)
	assert.Contains(t, ll.out, "unix=ok", "Landlock alone does not cover pathname sockets")
}

// Finding 8: a System V segment, a key in the user keyring and a
// double-forked child outlived the visit.
func TestNothingOutlivesTheVisit(t *testing.T) {
	me := self(t)
	dir := testenv.NobodyTempDir(t)
	alive := filepath.Join(dir, "alive")
	key := 0x7e7e0000 + os.Getpid()%0xffff
	name := fmt.Sprintf("tether-left-%d", time.Now().UnixNano())
	script := fmt.Sprintf(`%[1]s %[2]s shm %[3]d
%[1]s %[2]s key %[4]s
(setsid sh -c 'while :; do echo x >> %[5]s; sleep 0.05; done' </dev/null >/dev/null 2>&1 &)
sleep 0.3
`, me, probeCommand, key, name, alive)
	r := confined(t, full(t), Policy{RO: []string{me}, RW: []string{dir}}, script)
	assert.Equal(t, 0, r.code, r.out)
	assert.Contains(t, r.out, "shm=ok")
	assert.Contains(t, r.out, "key=ok")
	require.FileExists(t, alive, "the child ran")

	time.Sleep(300 * time.Millisecond)
	size := fileSize(alive)
	time.Sleep(400 * time.Millisecond)
	assert.Equal(t, size, fileSize(alive), "the double-forked child died with the visit")
	assert.False(t, shmExists(key), "the segment died with the visit's IPC namespace")
	assert.NoError(t, probe("findkey", name), "no key of the visit is in this user's keyrings")
	next := confined(t, full(t), Policy{RO: []string{me}}, me+" "+probeCommand+" findkey "+name)
	assert.Contains(t, next.out, "findkey=ok", "nor in the next visit's")

	// The control: Landlock alone leaves the segment behind (the attack).
	ll := confined(t, landlockOnlySandbox(t), Policy{RO: []string{me}}, fmt.Sprintf("%s %s shm %d", me, probeCommand, key+1))
	assert.Contains(t, ll.out, "shm=ok")
	assert.True(t, shmExists(key+1), "without an IPC namespace the segment stays")
	if id, err := unix.SysvShmGet(key+1, 0, 0); err == nil {
		_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	}
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return st.Size()
}

// shmExists reports whether a System V segment with key is in this
// process's IPC namespace.
func shmExists(key int) bool {
	_, err := unix.SysvShmGet(key, 0, 0)
	return err == nil
}

// Finding 9: chrt -f 99, chattr +i and setuid worked, and mountinfo
// showed the host's mounts.
func TestNoPrivilegeLeftAndNoHostMounts(t *testing.T) {
	me := self(t)
	dir := testenv.NobodyTempDir(t)
	f := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(f, []byte("x"), 0o666))
	r := confined(t, full(t), Policy{RO: []string{me}, RW: []string{dir}}, fmt.Sprintf(`%[1]s %[2]s fifo
%[1]s %[2]s immutable %[3]s
%[1]s %[2]s setuid
grep -c . /proc/self/mountinfo | sed 's/^/mounts=/'
grep -q cgroup /proc/self/mountinfo && echo host-cgroups-visible; true
`, me, probeCommand, f))
	assert.Equal(t, 0, r.code, r.out)
	assert.Contains(t, r.out, "fifo=operation not permitted")
	assert.Contains(t, r.out, "immutable=operation not permitted")
	assert.Regexp(t, `setuid=(operation not permitted|invalid argument)`, r.out)
	assert.NotContains(t, r.out, "host-cgroups-visible")
	require.NoError(t, os.Remove(f), "the worker can remove what the visit touched")
}

// A node's memory limit holds: an allocation over it fails (or is killed,
// where the visit has a cgroup), one under it works.
func TestMemoryLimitIsEnforced(t *testing.T) {
	me := self(t)
	sb := full(t)
	p := Policy{RO: []string{me}, Limits: Limits{MemoryBytes: 96 << 20}}
	small := confinedProgram(t, sb, p, me, []string{probeCommand, "alloc", "16"})
	assert.Contains(t, small.out, "alloc=ok", small.out)
	big := confinedProgram(t, sb, p, me, []string{probeCommand, "alloc", "512"})
	assert.NotContains(t, big.out, "alloc=ok", big.out)
	if sb.cgroups != nil {
		assert.True(t, big.oom, "the cgroup killed it")
	} else {
		assert.Contains(t, big.out, "over the node's limit of 96 MiB: all of them were killed", "the helper's watch ended the visit")
		assert.Equal(t, 137, big.code)
	}
	unlimited := confinedProgram(t, sb, Policy{RO: []string{me}}, me, []string{probeCommand, "alloc", "512"})
	assert.Contains(t, unlimited.out, "alloc=ok", "the default limit allows it")
}

// runLaunch starts l with stdin, waits, and returns its output and exit
// code.
func runLaunch(t *testing.T, l *Launch, stdin *os.File) (string, int) {
	t.Helper()
	cmd := newCmd(l)
	cmd.Stdin = stdin
	out, err := outputOf(cmd, l)
	l.Finish()
	code := 0
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if err != nil && code == 0 {
		t.Fatal(err)
	}
	return out, code
}

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// The test binary is its own confine helper, as tether-worker is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Subcommand {
		os.Exit(Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

const canary = "TETHER_SANDBOX_CANARY"

// confined runs script with /bin/sh inside the sandbox of this test binary,
// with policy p, and returns its combined output and exit code.
func confined(t *testing.T, p Policy, script string, env ...string) (string, int) {
	return confinedIn(t, helper(t, false), p, script, env...)
}

// helper is the sandbox of this test binary, with or without namespaces.
func helper(t *testing.T, namespaces bool) *Sandbox {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	sb := &Sandbox{Helper: []string{self, Subcommand}}
	if namespaces {
		require.NoError(t, probeNamespaces(sb.Helper), "PID namespaces work on this machine")
		sb.Namespaces = true
	}
	return sb
}

func confinedIn(t *testing.T, sb *Sandbox, p Policy, script string, env ...string) (string, int) {
	t.Helper()
	argv := sb.Command(p, "/bin/sh", []string{"-c", script})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return string(out), code
}

func requireLandlock(t *testing.T) {
	t.Helper()
	if ABI() < 1 {
		testenv.Unavailable(t, "this kernel has no Landlock")
	}
}

// On this project's machines Landlock is there, so the default mode
// confines: a worker never silently runs agents unconfined where it could
// confine them.
func TestLandlockIsEnforcedByDefault(t *testing.T) {
	requireLandlock(t)
	sb, err := New(ModeAuto, []string{"/proc/self/exe", Subcommand}, nil, nil)
	require.NoError(t, err)
	require.NotNil(t, sb, "auto mode confines where the kernel has Landlock")
	assert.Contains(t, sb.String(), "landlock")
	off, err := New(ModeOff, []string{"x"}, nil, nil)
	require.NoError(t, err)
	assert.Nil(t, off)
	assert.Equal(t, "none", off.String())
	_, err = ParseMode("bwrap")
	assert.Error(t, err)
}

// A confined process reads and writes inside its paths, reads the system,
// and gets EACCES everywhere else; the program it runs is exec'd.
func TestConfineDeniesOutsideAllowsInside(t *testing.T) {
	requireLandlock(t)
	base := t.TempDir()
	inside, ro, outside := filepath.Join(base, "run-a"), filepath.Join(base, "cli"), filepath.Join(base, "run-b")
	for _, d := range []string{inside, ro, outside} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("OTHER-RUN-SECRET"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ro, "tool.txt"), []byte("cli-file"), 0o644))

	out, code := confined(t, Policy{RW: []string{inside}, RO: []string{ro}}, `
cat `+outside+`/secret.txt; echo "read-outside=$?"
ls `+base+`; echo "list-parent=$?"
echo hi > `+ro+`/new.txt; echo "write-ro=$?"
cat `+ro+`/tool.txt; echo
echo written > `+inside+`/x.txt && cat `+inside+`/x.txt
mkdir `+inside+`/d && mv `+inside+`/x.txt `+inside+`/d/y.txt && echo renamed
head -c 4 /usr/bin/env >/dev/null && echo system-read
echo pid=$$
`)
	assert.Equal(t, 0, code, out)
	assert.NotContains(t, out, "OTHER-RUN-SECRET")
	assert.Contains(t, out, "read-outside=1")
	assert.Contains(t, out, "list-parent=2")
	assert.Contains(t, out, "write-ro=")
	assert.NotContains(t, out, "write-ro=0")
	assert.Contains(t, out, "cli-file")
	assert.Contains(t, out, "written")
	assert.Contains(t, out, "renamed", "a rename between directories of the run works")
	assert.Contains(t, out, "system-read")
	assert.NoFileExists(t, filepath.Join(ro, "new.txt"))
}

// The helper fails closed: a bad command line or a program that cannot be
// exec'd exits ExitConfine without running anything.
func TestConfineFailsClosed(t *testing.T) {
	requireLandlock(t)
	self, err := os.Executable()
	require.NoError(t, err)
	for _, args := range [][]string{
		{Subcommand, "--rw"},
		{Subcommand, "--", "sh"},
		{Subcommand, "--", "/nonexistent/program"},
		{Subcommand, "--bogus", "x", "--", "/bin/true"},
	} {
		out, err := exec.Command(self, args...).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v: %s", args, out)
		assert.Equal(t, ExitConfine, ee.ExitCode(), "%v: %s", args, out)
		assert.Contains(t, string(out), "tether-worker confine:")
	}
}

// The worker's environment is out of reach: a confined process, even as
// root, cannot read /proc/<pid>/environ of the worker (non-dumpable, and
// the program holds no CAP_SYS_PTRACE), and in its own PID namespace it
// does not even see the worker or a sibling visit, while its own
// environment is readable. Secret files of /etc are denied, and the mount
// table cannot be changed to get the worker's /proc back.
func TestConfineHidesOtherProcesses(t *testing.T) {
	requireLandlock(t)
	sibling := exec.Command("/bin/sleep", "30")
	sibling.Env = []string{canary + "=SIBLING-CANARY-2"}
	require.NoError(t, sibling.Start())
	t.Cleanup(func() { _ = sibling.Process.Kill(); _ = sibling.Wait() })
	// The worker's secret is in its initial environment, as a real
	// worker's is: a child started with it stands in for the worker.
	worker := exec.Command("/bin/sleep", "30")
	worker.Env = []string{canary + "=WORKER-CANARY-1"}
	require.NoError(t, worker.Start())
	t.Cleanup(func() { _ = worker.Process.Kill(); _ = worker.Wait() })
	time.Sleep(50 * time.Millisecond)
	script := `
cat /proc/` + strconv.Itoa(worker.Process.Pid) + `/environ; echo "worker=$?"
cat /proc/` + strconv.Itoa(sibling.Process.Pid) + `/environ; echo "sibling=$?"
grep -a -h CANARY /proc/[0-9]*/environ 2>/dev/null | grep -v OWN-CANARY
cat /proc/self/environ | tr '\0' '\n' | grep OWN-CANARY
ls /proc | grep -c '^[0-9]' | sed 's/^/processes=/'
cat /etc/shadow; echo "shadow=$?"
cat /etc/passwd >/dev/null; echo "passwd=$?"
umount /proc 2>/dev/null; echo "umount=$?"
`
	out, code := confinedIn(t, helper(t, true), Policy{RW: []string{t.TempDir()}}, script, canary+"=OWN-CANARY-3")
	assert.Equal(t, 0, code, out)
	assert.NotContains(t, out, "WORKER-CANARY-1")
	assert.NotContains(t, out, "SIBLING-CANARY-2")
	assert.Contains(t, out, "worker=1")
	assert.Contains(t, out, "sibling=1")
	assert.Contains(t, out, "OWN-CANARY-3", "a process still reads its own environment")
	assert.Regexp(t, `processes=[1-9]\b`, out, "only the visit's few processes are listed")
	assert.Contains(t, out, "passwd=0")
	assert.NotContains(t, out, "umount=0")
	if _, err := os.Stat("/etc/shadow"); err == nil {
		assert.Contains(t, out, "shadow=1")
	}
	t.Log(strings.TrimSpace(out))
}

// Without namespaces (a container that forbids them), the worker's own
// environment still stays hidden: it is non-dumpable and the confined
// program has no CAP_SYS_PTRACE to override that, even as root.
func TestConfineWithoutNamespacesHidesNonDumpableWorker(t *testing.T) {
	requireLandlock(t)
	// The test process plays the worker.
	require.NoError(t, HideEnviron())
	out, code := confined(t, Policy{RW: []string{t.TempDir()}}, `
head -c 100 /proc/`+strconv.Itoa(os.Getpid())+`/environ; echo "worker=$?"
grep CapEff /proc/self/status
`)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "worker=1", out)
	assert.NotContains(t, out, "PATH=", out)
}

// The same tests with the worker as an unprivileged user (uid 65534), as
// the Dockerfile runs it: the helper then makes a user namespace too.
func TestConfineAsNobody(t *testing.T) {
	if testenv.InNobodyChild() {
		t.Skip("runs the others as uid 65534")
	}
	requireLandlock(t)
	names := "(TestConfineDeniesOutsideAllowsInside|TestConfineHidesOtherProcesses|TestConfineWithoutNamespacesHidesNonDumpableWorker)"
	out, err := testenv.RunAsNobody(t, names)
	if err != nil {
		testenv.Unavailable(t, "cannot run as uid %d: %v", testenv.Nobody, err)
	}
	for _, n := range []string{"TestConfineDeniesOutsideAllowsInside", "TestConfineHidesOtherProcesses", "TestConfineWithoutNamespacesHidesNonDumpableWorker"} {
		assert.Contains(t, string(out), "--- PASS: "+n)
	}
}

package sandbox

import (
	"bytes"
	"context"
	"github.com/tether-run/tether/internal/sandbox/confine"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// The test binary is its own confine helper, as tether-worker is, and its
// own probe (see probe_test.go) inside the sandbox.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == confine.Subcommand {
		os.Exit(confine.Main(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == probeCommand {
		os.Exit(probeMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

const canary = "TETHER_SANDBOX_CANARY"

var (
	fullOnce sync.Once
	fullSB   *Sandbox
	fullErr  error
)

// full is the whole sandbox of this test binary; a machine without it
// fails the test under CI and skips it elsewhere.
func full(t *testing.T) *Sandbox {
	t.Helper()
	fullOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			fullErr = err
			return
		}
		fullSB, fullErr = New(context.Background(), Config{Mode: ModeFull, Helper: []string{self, confine.Subcommand}, Services: testServices})
	})
	if fullErr != nil {
		testenv.Unavailable(t, "the full sandbox: %v", fullErr)
	}
	return fullSB
}

// landlockOnlySandbox is the confinement of a machine without namespaces.
func landlockOnlySandbox(t *testing.T) *Sandbox {
	t.Helper()
	requireLandlock(t)
	self, err := os.Executable()
	require.NoError(t, err)
	return &Sandbox{Helper: []string{self, confine.Subcommand}, Level: LevelLandlock}
}

// result is what one confined run left.
type result struct {
	out     string
	code    int
	refused []string
	oom     bool
}

// confined runs script with /bin/sh under sb with policy p.
func confined(t *testing.T, sb *Sandbox, p Policy, script string, env ...string) result {
	t.Helper()
	return confinedProgram(t, sb, p, "/bin/sh", []string{"-c", script}, env...)
}

func confinedProgram(t *testing.T, sb *Sandbox, p Policy, prog string, args []string, env ...string) result {
	t.Helper()
	v := &Visit{Node: "test"}
	l, err := sb.Launch(p, prog, args, append(os.Environ(), env...), v)
	require.NoError(t, err)
	cmd := exec.Command(l.Argv[0], l.Argv[1:]...)
	cmd.Env = l.Env
	cmd.Dir = p.Dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	l.Prepare(cmd)
	require.NoError(t, cmd.Start())
	l.Started()
	err = cmd.Wait()
	refused, oom := l.Finish()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	assert.Equal(t, refused, v.Refused(), "the visit carries the refusals")
	return result{buf.String(), code, refused, oom}
}

func requireLandlock(t *testing.T) {
	t.Helper()
	if ABI() < 1 {
		testenv.Unavailable(t, "this kernel has no Landlock")
	}
}

// On this project's machines the whole sandbox is there, so the default
// mode uses it: a worker never silently runs agents with less.
func TestFullSandboxIsTheDefault(t *testing.T) {
	requireLandlock(t)
	self, err := os.Executable()
	require.NoError(t, err)
	sb, err := New(context.Background(), Config{Mode: ModeAuto, Helper: []string{self, confine.Subcommand}})
	require.NoError(t, err)
	t.Cleanup(func() { sb.Close() })
	if sb.Level != LevelFull {
		testenv.Unavailable(t, "the full sandbox: %v", sb.Why)
	}
	assert.Contains(t, sb.String(), "bubblewrap")
	off, err := New(context.Background(), Config{Mode: ModeOff, Helper: []string{"x"}})
	require.NoError(t, err)
	assert.Nil(t, off)
	assert.Contains(t, off.String(), "none")
	_, err = ParseMode("bwrap")
	assert.Error(t, err)
	_, err = New(context.Background(), Config{Mode: ModeFull, Helper: []string{self, confine.Subcommand}, Bwrap: "/nonexistent/bwrap"})
	assert.ErrorIs(t, err, ErrUnsupported, "full mode refuses to start without what it needs")
}

// A confined process reads and writes inside its paths, reads the system,
// and finds nothing else; the program it runs is started.
func TestConfineDeniesOutsideAllowsInside(t *testing.T) {
	for _, lv := range levels(t) {
		t.Run(lv.name, func(t *testing.T) {
			base := testenv.NobodyTempDir(t)
			inside, ro, outside := filepath.Join(base, "run-a"), filepath.Join(base, "cli"), filepath.Join(base, "run-b")
			for _, d := range []string{inside, ro, outside} {
				require.NoError(t, os.MkdirAll(d, 0o755))
			}
			require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("OTHER-RUN-SECRET"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(ro, "tool.txt"), []byte("cli-file"), 0o644))
			r := confined(t, lv.sb, Policy{RW: []string{inside}, RO: []string{ro}, Dir: inside}, `
cat `+outside+`/secret.txt; echo "read-outside=$?"
echo "listed: $(ls `+base+` 2>/dev/null | tr '\n' ' ')"
echo hi > `+ro+`/new.txt; echo "write-ro=$?"
cat `+ro+`/tool.txt; echo
echo written > `+inside+`/x.txt && cat `+inside+`/x.txt
mkdir `+inside+`/d && mv `+inside+`/x.txt `+inside+`/d/y.txt && echo renamed
head -c 4 /usr/bin/env >/dev/null && echo system-read
cat /etc/shadow; echo "shadow=$?"
cat /etc/passwd >/dev/null; echo "passwd=$?"
`)
			assert.Equal(t, 0, r.code, r.out)
			assert.NotContains(t, r.out, "OTHER-RUN-SECRET")
			assert.NotContains(t, r.out, "read-outside=0")
			assert.NotRegexp(t, `listed: .*run-b`, r.out, "the parent shows nothing but what the process may reach")
			assert.Contains(t, r.out, "write-ro=")
			assert.NotContains(t, r.out, "write-ro=0")
			assert.Contains(t, r.out, "cli-file")
			assert.Contains(t, r.out, "written")
			assert.Contains(t, r.out, "renamed", "a rename between directories of the run works")
			assert.Contains(t, r.out, "system-read")
			assert.Contains(t, r.out, "passwd=0")
			assert.NotContains(t, r.out, "shadow=0")
			assert.NoFileExists(t, filepath.Join(ro, "new.txt"))
		})
	}
}

type level struct {
	name string
	sb   *Sandbox
}

// levels are the confinements a test runs under: the full sandbox, and
// Landlock alone (a machine without namespaces).
func levels(t *testing.T) []level {
	return []level{{"full", full(t)}, {"landlock", landlockOnlySandbox(t)}}
}

// The helper fails closed: a bad command line or a program that cannot be
// started exits confine.ExitConfine without running anything.
func TestConfineFailsClosed(t *testing.T) {
	requireLandlock(t)
	self, err := os.Executable()
	require.NoError(t, err)
	for _, args := range [][]string{
		{confine.Subcommand, "--rw"},
		{confine.Subcommand, "--", "sh"},
		{confine.Subcommand, "--", "/nonexistent/program"},
		{confine.Subcommand, "--bogus", "x", "--", "/bin/true"},
		{confine.Subcommand, "--inner", "--bogus", "x", "--", "/bin/true"},
		{confine.Subcommand, "--inner", "--", "relative"},
	} {
		out, err := exec.Command(self, args...).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v: %s", args, out)
		assert.Equal(t, confine.ExitConfine, ee.ExitCode(), "%v: %s", args, out)
		assert.Contains(t, string(out), "tether confine:")
	}
}

// The worker's environment and other visits are out of reach: in its own
// PID namespace the process sees neither the worker nor a sibling, and
// cannot read their environment, while its own is readable.
func TestConfineHidesOtherProcesses(t *testing.T) {
	sb := full(t)
	sibling := exec.Command("/bin/sleep", "30")
	sibling.Env = []string{canary + "=SIBLING-CANARY-2"}
	require.NoError(t, sibling.Start())
	t.Cleanup(func() { _ = sibling.Process.Kill(); _ = sibling.Wait() })
	worker := exec.Command("/bin/sleep", "30")
	worker.Env = []string{canary + "=WORKER-CANARY-1"}
	require.NoError(t, worker.Start())
	t.Cleanup(func() { _ = worker.Process.Kill(); _ = worker.Wait() })
	time.Sleep(50 * time.Millisecond)
	r := confined(t, sb, Policy{RW: []string{testenv.NobodyTempDir(t)}}, `
cat /proc/`+strconv.Itoa(worker.Process.Pid)+`/environ; echo "worker=$?"
cat /proc/`+strconv.Itoa(sibling.Process.Pid)+`/environ; echo "sibling=$?"
grep -a -h CANARY /proc/[0-9]*/environ 2>/dev/null | grep -v OWN-CANARY
cat /proc/self/environ | tr '\0' '\n' | grep OWN-CANARY
ls /proc | grep -c '^[0-9]' | sed 's/^/processes=/'
cat /proc/1/environ >/dev/null 2>&1; echo "helper=$?"
`, canary+"=OWN-CANARY-3")
	assert.Equal(t, 0, r.code, r.out)
	assert.NotContains(t, r.out, "WORKER-CANARY-1")
	assert.NotContains(t, r.out, "SIBLING-CANARY-2")
	assert.NotContains(t, r.out, "worker=0")
	assert.NotContains(t, r.out, "sibling=0")
	assert.NotContains(t, r.out, "helper=0", "the helper is not dumpable")
	assert.Contains(t, r.out, "OWN-CANARY-3", "a process still reads its own environment")
	assert.Regexp(t, `processes=[1-9]\b`, r.out, "only the visit's few processes are listed")
	t.Log(strings.TrimSpace(r.out))
}

// Without namespaces (a container that forbids them), the worker's own
// environment still stays hidden: it is non-dumpable and the confined
// program has no capability to override that, even as root.
func TestConfineWithoutNamespacesHidesNonDumpableWorker(t *testing.T) {
	sb := landlockOnlySandbox(t)
	// The test process plays the worker.
	require.NoError(t, HideEnviron())
	r := confined(t, sb, Policy{RW: []string{testenv.NobodyTempDir(t)}}, `
head -c 100 /proc/`+strconv.Itoa(os.Getpid())+`/environ; echo "worker=$?"
grep CapEff /proc/self/status
`)
	assert.Equal(t, 0, r.code, r.out)
	assert.Contains(t, r.out, "worker=1", r.out)
	assert.NotContains(t, r.out, "PATH=", r.out)
	assert.Contains(t, r.out, "CapEff:\t0000000000000000")
}

// newCmd is the command that starts l.
func newCmd(l *Launch) *exec.Cmd {
	cmd := exec.Command(l.Argv[0], l.Argv[1:]...)
	cmd.Env = l.Env
	l.Prepare(cmd)
	return cmd
}

// outputOf runs cmd, started from l, and returns what it printed.
func outputOf(cmd *exec.Cmd, l *Launch) (string, error) {
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return "", err
	}
	l.Started()
	err := cmd.Wait()
	if _, ok := err.(*exec.ExitError); ok {
		err = nil
	}
	return buf.String(), err
}

// nobodyTests run again with the worker as an unprivileged user (uid
// 65534), as the Dockerfile runs it.
var nobodyTests = []string{
	"TestConfineDeniesOutsideAllowsInside", "TestConfineHidesOtherProcesses", "TestConfineWithoutNamespacesHidesNonDumpableWorker",
	"TestNetworkIsTheNodesOnly", "TestNoRawSocketsNoCapabilitiesNotRoot", "TestNoTerminal", "TestHostSocketsDoNotExist",
	"TestNothingOutlivesTheVisit", "TestNoPrivilegeLeftAndNoHostMounts", "TestMemoryLimitIsEnforced", "TestSignalReachesTheProgram", "TestCLIBinOpensOnlyItsLinks",
	"TestNoNetlinkNoVsock", "TestProgramIsFoundAsTheSandboxSeesIt", "TestPathsAreNeverBoundThroughALink",
}

func TestConfineAsNobody(t *testing.T) {
	if testenv.InNobodyChild() {
		t.Skip("runs the others as uid 65534")
	}
	requireLandlock(t)
	out, err := testenv.RunAsNobody(t, "("+strings.Join(nobodyTests, "|")+")")
	if err != nil {
		testenv.Unavailable(t, "cannot run as uid %d: %v", testenv.Nobody, err)
	}
	for _, n := range nobodyTests {
		assert.Contains(t, string(out), "--- PASS: "+n)
	}
}

// A CLI folder reached through a linked directory (a .tools that is a
// link, a version manager's current/) is found inside as it is outside,
// for two paths behind the one link and for a relative link between
// them; bubblewrap once refused to make the linked folder twice.
func TestPathsBehindALinkedDirectory(t *testing.T) {
	sb := full(t)
	base := testenv.NobodyTempDir(t)
	real := filepath.Join(base, "real")
	for _, d := range []string{"cli/bin", "cli/lib", "run"} {
		require.NoError(t, os.MkdirAll(filepath.Join(real, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(real, "cli/lib/tool.sh"), []byte("#!/bin/sh\necho tool-ran\n"), 0o755))
	require.NoError(t, os.Symlink("../lib/tool.sh", filepath.Join(real, "cli/bin/tool")))
	linked := filepath.Join(base, "linked")
	require.NoError(t, os.Symlink("real", linked))
	run := filepath.Join(base, "run")
	require.NoError(t, os.Symlink(filepath.Join(real, "run"), run))

	r := confined(t, sb, Policy{
		RO:  []string{filepath.Join(linked, "cli/bin"), filepath.Join(linked, "cli/lib"), filepath.Join(linked, "cli/bin/tool")},
		RW:  []string{run},
		Dir: run,
	}, `
`+linked+`/cli/bin/tool
cat `+linked+`/cli/lib/tool.sh >/dev/null && echo lib-read
echo w > `+run+`/x && cat `+real+`/run/x >/dev/null && echo run-written
`)
	assert.Equal(t, 0, r.code, r.out)
	assert.Contains(t, r.out, "tool-ran", "the CLI runs through its link")
	assert.Contains(t, r.out, "lib-read")
	assert.Contains(t, r.out, "run-written", "a linked workspace is the real one")
	assert.FileExists(t, filepath.Join(real, "run/x"))
}

package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
	"github.com/tether-run/tether/internal/testenv"
)

// A worker that has Landlock but no namespaces refuses a node whose
// network setting or permissions: full it cannot honour, with a typed,
// final error; TETHER_SANDBOX=off (no sandbox) runs it.
func TestWorkerWithoutNamespacesRefusesWhatItCannotConfine(t *testing.T) {
	a := newActs(t, blob.NewMem())
	a.Sandbox = &sandbox.Sandbox{Level: sandbox.LevelLandlock, Why: errors.New("user namespaces are not allowed here")}
	for _, n := range []graph.Node{
		{ID: "fetch", Kind: graph.KindTool, Run: []string{"true"}, Network: &graph.Network{Allow: []string{"proxy.golang.org:443"}}},
		{ID: "agent", Kind: graph.KindAgent, Backend: "scripted", Permissions: "full"},
	} {
		_, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: n.ID, Visit: 1, Node: n})
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr, n.ID)
		assert.Equal(t, ErrTypeSandboxRefused, appErr.Type())
		assert.True(t, appErr.NonRetryable())
		assert.Contains(t, err.Error(), "user namespaces are not allowed here")
		assert.Contains(t, err.Error(), "TETHER_SANDBOX=off")
	}
	plain := graph.Node{ID: "plain", Kind: graph.KindTool, Run: []string{"true"}}
	a.Sandbox = nil
	_, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "fetch", Visit: 1,
		Node: graph.Node{ID: "fetch", Kind: graph.KindTool, Run: []string{"true"}, Network: &graph.Network{Allow: []string{"proxy.golang.org:443"}}}})
	assert.NoError(t, err, "with the sandbox off, it runs")
	_, err = a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "plain", Visit: 1, Node: plain})
	assert.NoError(t, err)
}

// A tool node reaches a server its allowlist names, and without it not;
// what was refused is on its output.
func TestToolNetworkAllowlist(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "REACHED-THE-SITE") }))
	t.Cleanup(site.Close)
	addr := site.Listener.Addr().String()
	a := newActs(t, blob.NewMem())
	a.Sandbox = sandboxtest.New(t)
	fetch := []string{"/bin/sh", "-c", "curl -s -m 10 http://" + addr + "/ || echo unreachable; curl -s -m 10 -p -x \"$HTTPS_PROXY\" https://example.com/ -o /dev/null -w 'proxy=%{http_connect}\\n'"}

	out, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "fetch", Visit: 1,
		Node: graph.Node{ID: "fetch", Kind: graph.KindTool, Run: fetch, Network: &graph.Network{Allow: []string{addr}}}})
	require.NoError(t, err)
	assert.Contains(t, out.Output["stdout"], "REACHED-THE-SITE")
	assert.Contains(t, out.Output["stdout"], "proxy=403")
	assert.Equal(t, []string{"CONNECT example.com:443 refused: not in the node's network allowlist"}, out.Output[NetworkRefusedKey])

	out, err = a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "fetch", Visit: 2,
		Node: graph.Node{ID: "fetch", Kind: graph.KindTool, Run: fetch}})
	require.NoError(t, err)
	assert.NotContains(t, out.Output["stdout"], "REACHED-THE-SITE")
	assert.Contains(t, out.Output["stdout"], "unreachable")
	assert.NotContains(t, out.Output, NetworkRefusedKey, "no proxy at all for a node without network")
}

// A tool node's `limits:` reach its sandbox: a visit that goes over its
// memory is ended, one under it runs.
func TestToolMemoryLimit(t *testing.T) {
	a := newActs(t, blob.NewMem())
	a.Sandbox = sandboxtest.New(t)
	hog := []string{"/bin/sh", "-c", `x=$(head -c 300000000 /dev/zero | tr '\0' a); echo "survived ${#x}"`}
	out, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "hog", Visit: 1,
		Node: graph.Node{ID: "hog", Kind: graph.KindTool, Run: hog, Limits: &graph.Limits{Memory: "96MiB"}}})
	require.NoError(t, err)
	assert.NotContains(t, out.Output["stdout"], "survived")
	assert.NotEqual(t, 0, out.Output["exit_code"])
	if !strings.Contains(a.Sandbox.String(), "a cgroup per visit") {
		// Without a cgroup, the helper's watch ends it and says why.
		assert.Contains(t, out.Output["stderr"], "over the node's limit of 96 MiB")
	}

	out, err = a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "hog", Visit: 2,
		Node: graph.Node{ID: "hog", Kind: graph.KindTool, Run: hog}})
	require.NoError(t, err)
	assert.Contains(t, out.Output["stdout"], "survived 300000000", "the default limit lets it run")
}

// The attack on the sandbox of 3b88009 (docs/security.md, "Attack on the
// paths the sandbox binds") found that a tool node bound any directory of
// the worker's into its own sandbox through the path of its program, and
// that an agent's workdir was read-write anywhere. Each test below runs the
// attack through real confined visits (the Visit activity, under the full
// sandbox), as the worker's user and, when that is root, again as uid
// 65534.

// asRootAndNobody runs attack as this process's user, and again as uid
// 65534 in a child test process when this one is root.
func asRootAndNobody(t *testing.T, attack func(t *testing.T)) {
	t.Helper()
	if testenv.InNobodyChild() {
		attack(t)
		return
	}
	t.Run(fmt.Sprintf("uid-%d", os.Geteuid()), attack)
	if os.Geteuid() != 0 {
		return
	}
	name := t.Name()
	t.Run("uid-65534", func(t *testing.T) {
		sandboxtest.Helper(t) // built here: uid 65534 cannot write the build cache
		out, err := testenv.RunAsNobody(t, name)
		if err != nil {
			testenv.Unavailable(t, "cannot run as uid %d: %v", testenv.Nobody, err)
		}
		assert.Contains(t, string(out), "--- PASS: "+name)
	})
}

// toolVisit runs a tool node's visit of run runID.
func toolVisit(ctx context.Context, a *Activities, runID string, visit int, node graph.Node) (*VisitResult, error) {
	node.Kind = graph.KindTool
	return a.Visit(ctx, &VisitRequest{RunID: runID, NodeID: node.ID, Visit: visit, Started: time.Now(), Node: node})
}

// attackActs are activities confined by the full sandbox, in a base
// directory uid 65534 may enter.
func attackActs(t *testing.T, opts ...sandboxtest.Option) (*Activities, string) {
	t.Helper()
	base := testenv.NobodyTempDir(t)
	a := newActs(t, blob.NewMem())
	a.WorkDir, a.StateDir = filepath.Join(base, "work"), filepath.Join(base, "state")
	a.Sandbox = sandboxtest.New(t, opts...)
	return a, base
}

// Finding 1 (HIGH): a tool's program path bound any host directory. The
// worker gave the sandbox the directory of run[0], computed from its text,
// while the kernel follows the links in it: visit 1 plants `s`, a link
// into a deep directory of the workspace, and a script at the workspace's
// copy of the target's path; visit 2 runs `<workspace>/s/../../…/<target>/x`,
// whose text names the target directory (bound read-only) while the kernel
// runs the planted script, which reads the target. The targets: a
// directory only the worker's user may enter (a root-only one as root),
// and the worker's work directory with another run's workspace. Without
// "..": a link to another run's directory runs that run's own program
// with the attacker's arguments. A program whose directory is / hung the
// visit. And a command found through a shim on the worker's PATH (a
// version manager's, in a home) bound the shim's directory.
//
// Now every one is refused before anything starts (PathRefused), the
// shim is passed over for the system's program as the sandbox's own
// lookup would, and a link into a system directory (a venv's python)
// still runs.
func TestToolProgramPathBindsNothing(t *testing.T) {
	asRootAndNobody(t, attackProgramPath)
}

func attackProgramPath(t *testing.T) {
	a, base := attackActs(t)
	secret := "PROGRAM-PATH-SECRET-" + filepath.Base(base)
	private := filepath.Join(base, "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(private, "secret.txt"), []byte(secret+"-private\n"), 0o600))
	otherBin := filepath.Join(a.WorkDir, "other-run", "bin")
	require.NoError(t, os.MkdirAll(otherBin, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(a.WorkDir, "other-run", "secret.txt"), []byte(secret+"-other-run\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(otherBin, "secret.txt"), []byte(secret+"-other-bin\n"), 0o600))
	cat, err := os.ReadFile("/bin/cat")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(otherBin, "cat"), cat, 0o700))

	ws := filepath.Join(a.WorkDir, "atk")
	// s leads one level deeper into the workspace than the workspace
	// lies below /, so that as many ".." after it come back to the
	// workspace for the kernel and reach / for the text.
	depth := strings.Count(ws, "/")
	var chain []string
	for i := range depth {
		chain = append(chain, fmt.Sprint(i))
	}
	up := strings.Repeat("/..", depth+1)
	plant := []string{"/bin/sh", "-c", fmt.Sprintf(`set -e
mkdir -p d/%[1]s && ln -s d/%[1]s s
for target in %[2]s %[3]s; do
	mkdir -p ".$target" && printf '#!/bin/sh\ncat %[2]s/secret.txt %[3]s/other-run/secret.txt 2>&1\n' > ".$target/x" && chmod +x ".$target/x"
done
printf '#!/bin/sh\necho ran-at-root\n' > x && chmod +x x
ln -s %[4]s o
ln -s /usr/bin sysbin
echo planted`, strings.Join(chain, "/"), private, a.WorkDir, otherBin)}
	res, err := toolVisit(context.Background(), a, "atk", 1, graph.Node{ID: "plant", Run: plant})
	require.NoError(t, err)
	require.Contains(t, res.Output["stdout"], "planted", res.Output["stderr"])

	for name, run := range map[string][]string{
		"root-only directory":            {ws + "/s" + up + private + "/x"},
		"the worker's work directory":    {ws + "/s" + up + a.WorkDir + "/x"},
		"another run's program":          {ws + "/o/cat", otherBin + "/secret.txt"},
		"a program whose directory is /": {ws + "/s" + up + "/x"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			began := time.Now()
			res, err := toolVisit(ctx, a, "atk", 2, graph.Node{ID: "attack", Run: run})
			took := time.Since(began)
			if res != nil {
				assert.NotContains(t, fmt.Sprint(res.Output), secret, "the attack read the worker's files")
				assert.NotContains(t, fmt.Sprint(res.Output), "ran-at-root")
			}
			require.Error(t, err, "the visit is refused")
			assert.Equal(t, ErrTypePathRefused, appType(err), "%v", err)
			assert.NotContains(t, err.Error(), secret)
			assert.Less(t, took, 20*time.Second, "refused at once, not after a hang")
		})
	}

	t.Run("a shim on the worker's PATH", func(t *testing.T) {
		shims := filepath.Join(base, "shims")
		require.NoError(t, os.Mkdir(shims, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(shims, "secret.txt"), []byte(secret+"-shims\n"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(shims, "sh"), []byte("#!/bin/sh\ncat "+shims+"/secret.txt\n"), 0o700))
		t.Setenv("PATH", shims+":"+os.Getenv("PATH"))
		res, err := toolVisit(context.Background(), a, "atk", 3, graph.Node{ID: "shim", Run: []string{"sh", "-c", "echo the-systems-sh"}})
		require.NoError(t, err)
		assert.NotContains(t, fmt.Sprint(res.Output), secret, "the shim's directory was bound and the shim ran")
		assert.Contains(t, res.Output["stdout"], "the-systems-sh", "the sandbox's own lookup finds the system's sh: %v", res.Output)
	})

	t.Run("a link into a system directory", func(t *testing.T) {
		res, err := toolVisit(context.Background(), a, "atk", 4, graph.Node{ID: "venv", Run: []string{"./sysbin/echo", "through-a-link"}})
		require.NoError(t, err)
		assert.Contains(t, res.Output["stdout"], "through-a-link", "a link to an allowed place still runs")
	})
}

// Finding 2 (HIGH): an agent's absolute workdir was read-write anywhere:
// set to another run's workspace, the visit overwrote that run's file; set
// to a directory only the worker may enter (/root, as root), it created a
// file there. The same held for a relative workdir through a link a
// earlier visit planted in the workspace. The visits here are tool nodes,
// which take their node's workdir as an agent's CLI does.
//
// Now an absolute workdir runs only below the roots the worker's operator
// names (TETHER_WORKDIR_ROOTS; none by default), never in, around or
// holding the worker's work and state directories, and no workdir is
// taken through a link: each is refused (WorkdirRefused) and nothing is
// written.
func TestWorkdirStaysWhereTheOperatorSays(t *testing.T) {
	asRootAndNobody(t, attackWorkdir)
}

func attackWorkdir(t *testing.T) {
	a, base := attackActs(t)
	other := filepath.Join(a.WorkDir, "other-run")
	require.NoError(t, os.MkdirAll(other, 0o700))
	victim := filepath.Join(other, "file.txt")
	require.NoError(t, os.WriteFile(victim, []byte("the other run's work\n"), 0o600))
	private := filepath.Join(base, "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	write := []string{"/bin/sh", "-c", "echo overwritten > file.txt; echo pwned > pwned.txt; pwd"}
	refused := func(t *testing.T, wd string, visit int) {
		t.Helper()
		_, err := toolVisit(context.Background(), a, "atk", visit, graph.Node{ID: "w", Workdir: wd, Run: write})
		require.Error(t, err, "workdir %s", wd)
		assert.Equal(t, ErrTypeWorkdirRefused, appType(err), "%v", err)
	}

	refused(t, other, 1)
	refused(t, filepath.Join(private, "made-by-the-visit"), 2)
	assert.ErrorContains(t, func() error {
		_, err := toolVisit(context.Background(), a, "atk", 3, graph.Node{ID: "w", Workdir: other, Run: write})
		return err
	}(), "TETHER_WORKDIR_ROOTS", "the message says how to allow one")

	// With a root that holds the worker's directories, still never in,
	// around or holding them, nor the root itself.
	a.WorkdirRoots = []string{base}
	refused(t, other, 4)
	refused(t, a.WorkDir, 5)
	refused(t, a.StateDir, 6)
	refused(t, base, 7)
	// Through a link an earlier visit planted in the workspace.
	_, err := toolVisit(context.Background(), a, "atk", 8, graph.Node{ID: "plant", Run: []string{"/bin/sh", "-c", "ln -s " + other + " sub && ln -s " + private + " priv"}})
	require.NoError(t, err)
	refused(t, "sub", 9)
	refused(t, "sub/deeper", 10)
	refused(t, "priv", 11)

	got, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "the other run's work\n", string(got), "the other run's file is untouched")
	assert.NoFileExists(t, filepath.Join(other, "pwned.txt"))
	assert.NoDirExists(t, filepath.Join(private, "made-by-the-visit"))
	assert.NoFileExists(t, filepath.Join(private, "pwned.txt"))

	// Below a root, in a directory of its own, the node runs there.
	checkout := filepath.Join(base, "checkouts", "repo")
	res, err := toolVisit(context.Background(), a, "atk", 12, graph.Node{ID: "w", Workdir: checkout, Run: write})
	require.NoError(t, err)
	assert.Equal(t, checkout, strings.TrimSpace(fmt.Sprint(res.Output["stdout"])))
	assert.FileExists(t, filepath.Join(checkout, "pwned.txt"))
}

// Finding 6 (LOW), the disk: nothing bounded what a visit wrote (2 GiB in
// /tmp and 2 GiB in the workspace went through). Now a node's `limits:
// {disk: SIZE}`, or the worker's default, bounds the visit's /tmp (a
// program that fills it gets "no space left on device") and what it adds
// to the worker's disk through its workspace and scratch, a removed file
// it still holds open included: over it, the whole visit is ended and
// says why. What the workspace held before the visit does not count.
func TestVisitDiskLimit(t *testing.T) {
	a, _ := attackActs(t, sandboxtest.WithLimits(sandbox.Limits{DiskBytes: 96 << 20}))
	node := func(limits *graph.Limits, script string) graph.Node {
		return graph.Node{ID: "fill", Limits: limits, Run: []string{"/bin/sh", "-c", script}}
	}
	limit := &graph.Limits{Disk: "64MiB"}
	fill := func(t *testing.T, visit int, n graph.Node) map[string]any {
		t.Helper()
		res, err := toolVisit(context.Background(), a, "disk", visit, n)
		require.NoError(t, err, "a tool's end is its output")
		return res.Output
	}

	out := fill(t, 1, node(limit, `dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>&1 | grep -o 'No space left on device'; echo "size=$(df -k /tmp | awk 'NR==2 {print $2}')k"; rm /tmp/fill; echo survived`))
	assert.Contains(t, out["stdout"], "No space left on device", "/tmp is bounded: %v", out)
	assert.Contains(t, out["stdout"], fmt.Sprintf("size=%dk", 64<<10))
	assert.Contains(t, out["stdout"], "survived", "a full /tmp is an error the program sees, not the end of the visit")

	for name, script := range map[string]string{
		"files":                    `for i in $(seq 1 40); do dd if=/dev/zero of=big$i bs=1M count=5 2>/dev/null; done; sleep 10; echo survived`,
		"a removed file kept open": `exec 3>hidden; rm hidden; dd if=/dev/zero bs=1M count=150 >&3 2>/dev/null; sleep 10; echo survived`,
	} {
		t.Run(name, func(t *testing.T) {
			out := fill(t, 2, node(limit, script))
			assert.NotContains(t, out["stdout"], "survived", "%v", out)
			assert.Equal(t, 137, out["exit_code"], "%v", out)
			assert.Contains(t, out["stderr"], "over the node's disk limit of 64 MiB: all of them were killed")
		})
	}

	out = fill(t, 3, node(nil, `dd if=/dev/zero of=big bs=1M count=150 2>/dev/null; sleep 10; echo survived`))
	assert.NotContains(t, out["stdout"], "survived", "the worker's default bounds a node without limits: %v", out)
	assert.Contains(t, out["stderr"], "over the node's disk limit of 96 MiB")

	// 40 MiB on top of the 200 MiB a visit with a larger limit left in
	// the workspace: under the limit.
	out = fill(t, 4, node(&graph.Limits{Disk: "1GiB"}, `rm -f big*; mkdir -p keep; for i in $(seq 1 40); do dd if=/dev/zero of=keep/$i bs=1M count=5 2>/dev/null; done; echo written`))
	require.Contains(t, out["stdout"], "written", "%v", out)
	out = fill(t, 5, node(limit, `dd if=/dev/zero of=more bs=1M count=40 2>/dev/null; sleep 1; echo survived`))
	assert.Contains(t, out["stdout"], "survived", "only what the visit adds counts: %v", out)
}

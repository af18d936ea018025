package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workerhost"
)

// TestBranchWorkspacesPick: each branch of a fan-out keeps its own files
// across its visits, each visit on a fresh worker; the join keeps the
// passing branch with the smallest change, and every branch can be taken
// out afterwards.
func TestBranchWorkspacesPick(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	fresh := h.freshWorkerPerVisit()
	g := parseGraph(t, graphYAML(t, "ws-pick"), "pick.yaml")
	const id = "ws-pick"
	res, err := h.result(h.start(id, g, nil))
	require.NoError(t, err)
	require.GreaterOrEqual(t, fresh.Visits(), 7)
	st := h.state(id)

	// a's second node saw its first node's file, on another worker.
	assert.Equal(t, "from a\nbase\n", fmt.Sprint(st.Outputs["a_tests"]["stdout"]))
	assert.Equal(t, "from b\n", fmt.Sprint(st.Outputs["b_tests"]["stdout"]))

	// The join's output: every branch with its change; c kept.
	ws, ok := st.Outputs["best"]["workspace"].(map[string]any)
	require.True(t, ok, "the join's output has a workspace key: %v", st.Outputs["best"])
	assert.Equal(t, "pick", ws["mode"])
	assert.Equal(t, "c", ws["kept"])
	branches, _ := ws["branches"].([]any)
	require.Len(t, branches, 3)
	lines := map[string]float64{}
	for _, b := range branches {
		m := b.(map[string]any)
		lines[m["name"].(string)] = m["lines"].(float64)
		assert.Len(t, m["head"], 40)
	}
	assert.Equal(t, map[string]float64{"a": 2, "b": 3, "c": 1}, lines)
	files := fmt.Sprint(res.Output["files"])
	assert.Equal(t, "base.txt\nc.txt\n", files, "the kept branch's files continue after the join")

	cp, err := h.runs.Latest(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, cp.Joined, 3)
	assert.Nil(t, cp.Branches, "no fan-out is open")
	for _, b := range cp.Joined {
		assert.Equal(t, "best", b.Join)
		assert.Equal(t, b.Name == "c", b.Kept, b.Name)
	}

	// The commands: every branch in the log, a branch's diff and export.
	log := h.tether(t, dir, "workspace", id, "log", "--all")
	for _, want := range []string{"best-1/a", "best-1/b", "best-1/c", "a_tests visit 1", "a visit 1", "b visit 1", "c visit 1", "plan visit 1", "branch: a"} {
		assert.Contains(t, log, want)
	}
	diff := h.tether(t, dir, "workspace", id, "diff", "--branch", "b")
	assert.Contains(t, diff, "+changed by b")
	assert.Contains(t, diff, "+++ b/b.txt")
	assert.NotContains(t, diff, "a.txt")
	out := filepath.Join(t.TempDir(), "a")
	h.tether(t, dir, "workspace", id, "export", out, "--branch", "best-1/a")
	got, err := os.ReadFile(filepath.Join(out, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "from a\nmore\n", string(got))
	subjects, err := exec.Command("git", "-C", out, "log", "--format=%s").CombinedOutput()
	require.NoError(t, err, "%s", subjects)
	assert.Equal(t, "a_tests visit 1\na visit 1\nplan visit 1\n", string(subjects))
	code, msg := tetherCode(t, "workspace", id, "diff", "--branch", "nope")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, msg, "best-1/a, best-1/b, best-1/c", "an unknown branch lists the known ones")

	// delete takes the branches' packs with the run.
	h.tether(t, dir, "delete", id)
	left, err := h.blobs.List(context.Background(), runstore.RunPrefix(id))
	require.NoError(t, err)
	assert.Empty(t, left)
	h.recordHistory("branch-workspaces-pick", id)
}

// TestBranchWorkspacesMerge: a merge join merges every branch into the
// trunk with git's three-way merge; a conflict is routed to a resolver
// with the conflicting file's markers and both sides in the join's output.
func TestBranchWorkspacesMerge(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	h.freshWorkerPerVisit()
	g := testGraph(t, "ws-merge")
	const id = "ws-merge"
	res, err := h.result(h.start(id, g, nil))
	require.NoError(t, err)
	assert.Equal(t, "plan>x>y>z>merge>resolver>check>done", sortedBranchPath(res.Path))
	st := h.state(id)
	ws := st.Outputs["merge"]["workspace"].(map[string]any)
	assert.Equal(t, "merge", ws["mode"])
	conflicts := ws["conflicts"].([]any)
	require.Len(t, conflicts, 1)
	c := conflicts[0].(map[string]any)
	assert.Equal(t, "shared.txt", c["path"])
	assert.Equal(t, []any{"x", "y"}, c["branches"])
	assert.Contains(t, c["ours"], "ONE")
	assert.Contains(t, c["theirs"], "uno")
	markers := fmt.Sprint(st.Outputs["resolver"]["stdout"])
	assert.Contains(t, markers, "<<<<<<<")
	assert.Contains(t, markers, ">>>>>>> y")
	assert.Equal(t, "ONE uno\ntwo\nthree\nz\n", fmt.Sprint(res.Output["out"]))

	log := h.tether(t, dir, "workspace", id, "log")
	assert.Contains(t, log, "merge merge 1")
	assert.Contains(t, log, "resolver visit 1")
	assert.Contains(t, log, "x visit 1", "the merge commit has the branches as parents")
	h.recordHistory("branch-workspaces-merge", id)
}

// sortedBranchPath is the run's path with each stretch of branch steps
// sorted, since concurrent branches finish in any order.
func sortedBranchPath(steps []runstore.Step) string {
	var ids []string
	for _, s := range steps {
		ids = append(ids, s.Node)
	}
	// x, y and z run concurrently: sort the steps between plan and merge.
	i := 0
	for i < len(ids) && ids[i] != "plan" {
		i++
	}
	j := i + 1
	for j < len(ids) && ids[j] != "merge" {
		j++
	}
	if i < len(ids) && j <= len(ids) {
		mid := append([]string(nil), ids[i+1:j]...)
		slices.Sort(mid)
		copy(ids[i+1:j], mid)
	}
	return strings.Join(ids, ">")
}

// TestRewindInsideAFanOut: the checkpoints a fan-out takes while its
// branches run record each branch's head and next node; rewinding a
// finished run to one of them continues every branch where it stood,
// with its files as they were then, and runs no finished visit again.
func TestRewindInsideAFanOut(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	h.freshWorkerPerVisit()
	g := testGraph(t, "ws-rewind-fan")
	const id = "ws-rewind-fan"
	run := h.start(id, g, nil)
	q := h.waitQuestion(id)
	require.Equal(t, "a_ask-1", q.ID)

	// The checkpoint with a waiting at its question and b at the join.
	var inside int64
	deadline := time.Now().Add(time.Minute)
	for inside == 0 {
		require.True(t, time.Now().Before(deadline), "no checkpoint recorded a at its question and b at the join")
		cps, err := h.runs.List(context.Background(), id)
		require.NoError(t, err)
		for _, info := range cps {
			cp, err := h.runs.Get(context.Background(), id, info.Seq)
			require.NoError(t, err)
			if len(cp.Branches) == 2 && cp.Branches[0].Next != nil && cp.Branches[0].Next.Node == "a_ask" && cp.Branches[1].Next == nil {
				inside = cp.Seq
				assert.Equal(t, "gather", cp.Branches[1].Join)
				assert.Equal(t, []string{"a_write"}, cp.Branches[0].Nodes)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	status := h.tether(t, dir, "status", id)
	assert.Regexp(t, `branch a_write +at a_ask`, status)
	assert.Regexp(t, `branch b_write +at the join gather`, status)

	h.answer(id, q.ID, "yes")
	res, err := h.result(run)
	require.NoError(t, err)
	require.Equal(t, "a\nmore\nb\n", fmt.Sprint(res.Output["out"]))

	out := h.tether(t, dir, "rewind", id, "--to", fmt.Sprint(inside))
	require.Contains(t, out, "rewound")
	q = h.waitQuestion(id)
	assert.Equal(t, "a_ask-1", q.ID, "branch a asks again, as its first visit there; b stays at the join")
	h.answer(id, q.ID, "yes")
	res, err = h.result(h.c.GetWorkflow(context.Background(), id, ""))
	require.NoError(t, err)
	assert.Equal(t, "a\nmore\nb\n", fmt.Sprint(res.Output["out"]), "a's file as the checkpoint had it, b's kept")
	cp, err := h.runs.Latest(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"plan": 1, "a_write": 1, "b_write": 1, "a_ask": 1, "a_more": 1, "gather": 1, "after": 1, "done": 1}, cp.Visits, "no visit ran twice in the rewound run")
}

// TestNestedFanOutBranches: a fan-out inside a branch starts from that
// branch's files and its join merges into the branch's line.
func TestNestedFanOutBranches(t *testing.T) {
	h := newHarness(t, "")
	h.freshWorkerPerVisit()
	g := testGraph(t, "ws-nested")
	res, err := h.result(h.start("ws-nested", g, nil))
	require.NoError(t, err)
	assert.Equal(t, "base.txt\nx.txt\nx1.txt\nx2.txt\nx_after.txt\ny.txt\n", fmt.Sprint(res.Output["files"]))
	cp, err := h.runs.Latest(context.Background(), "ws-nested")
	require.NoError(t, err)
	var names []string
	for _, b := range cp.Joined {
		names = append(names, b.Ref())
	}
	assert.Equal(t, []string{"xjoin-1/x/x1", "xjoin-1/x/x2", "gather-1/x", "gather-1/y"}, names)
}

// TestBranchVisitsWaitForAnUpgradedWorker: during a rolling upgrade, a
// worker of an older build (one that has Visit but neither VisitBranch nor
// JoinWorkspaces) is never handed a branch visit to run the old way; the
// visits wait until a worker of this build polls, and the run completes
// with every branch's files.
func TestBranchVisitsWaitForAnUpgradedWorker(t *testing.T) {
	h := newHarness(t, "")
	h.startRole(workerhost.RoleWorkflows, nil)
	old := worker.New(h.c, runapi.TaskQueue, worker.Options{})
	var oldVisits atomic.Int32
	old.RegisterActivityWithOptions(func(context.Context, *activities.VisitRequest) (*activities.VisitResult, error) {
		oldVisits.Add(1)
		return nil, fmt.Errorf("an old worker ran a visit")
	}, activity.RegisterOptions{Name: "Visit"})
	require.NoError(t, old.Start())
	stopped := false
	stopOld := func() {
		if !stopped {
			stopped = true
			old.Stop()
		}
	}
	t.Cleanup(stopOld)

	g := testGraph(t, "ws-upgrade")
	const id = "ws-upgrade"
	run := h.start(id, g, nil)
	q := h.waitQuestion(id)
	h.answer(id, q.ID, "go")
	// Only the old worker polls: the branch visits wait.
	deadline := time.Now().Add(time.Minute)
	for !hasTimer(t, h, id, "wait for a worker that runs VisitBranch") {
		require.True(t, time.Now().Before(deadline), "the branch visits never waited for an upgraded worker")
		time.Sleep(200 * time.Millisecond)
	}
	h.startRole(workerhost.RoleActivities, nil)
	res, err := h.result(run)
	require.NoError(t, err)
	stopOld()
	assert.Equal(t, "a\nb\n", fmt.Sprint(res.Output["out"]))
	assert.Zero(t, oldVisits.Load(), "the old worker ran no visit")
	h.recordHistory("branch-visit-waits-for-upgrade", id)
}

// hasTimer reports whether the run's history has a timer whose summary
// starts with prefix.
func hasTimer(t *testing.T, h *harness, id, prefix string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	it := h.c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if ev.GetTimerStartedEventAttributes() != nil {
			var s string
			if p := ev.GetUserMetadata().GetSummary(); p != nil {
				_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
			}
			if strings.HasPrefix(s, prefix) {
				return true
			}
		}
	}
	return false
}

// TestBranchLoopsCountTheirVisits: each branch of a fan-out loops on its
// node exactly as often as its `when` allows. Both branches' visits often
// end in one workflow task; the build before branch-visit-counts then let
// the second read its count from the copy the first's progress save had
// put in memory, and loop once more (1 run in 6 here;
// branch-visit-counts-before.json is such a run).
func TestBranchLoopsCountTheirVisits(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	g := parseGraph(t, graphYAML(t, "branch-loop"), "branch-loop.yaml")
	for i := range 12 {
		id := fmt.Sprintf("branch-loop-%d", i)
		res, err := h.result(h.start(id, g, nil))
		require.NoError(t, err)
		assert.Equal(t, "done", res.EndNode)
		visits := map[string]int{}
		for _, s := range res.Path {
			visits[s.Node]++
		}
		assert.Equal(t, map[string]int{"split": 1, "left": 3, "right": 3, "meet": 1, "done": 1}, visits, "%s: %s", id, pathString(res))
		assert.Equal(t, 3, h.state(id).Visits["left"], id)
		assert.Equal(t, 3, h.state(id).Visits["right"], id)
	}
	h.recordHistory("branch-visit-counts", "branch-loop-0")
}

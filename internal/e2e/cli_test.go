package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/testenv"
)

func tetherCode(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out strings.Builder
	code := cli.Main(args, &out, &out)
	return code, out.String()
}

// `tether validate` on a broken graph prints every problem with its code
// and position and exits 2.
func TestValidateBrokenGraph(t *testing.T) {
	code, out := tetherCode(t, "validate", filepath.Join(testenv.Root(), "internal", "graph", "testdata", "broken.yaml"))
	assert.Equal(t, cli.ExitUsage, code)
	lines := regexp.MustCompile(`(?m)^\S+broken\.yaml:\d+:\d+: G\d{3} (error|warning): .+$`).FindAllString(out, -1)
	assert.GreaterOrEqual(t, len(lines), 10, out)
	for _, code := range []string{"G013", "G016", "G017", "G020", "G024", "G031"} {
		assert.Contains(t, out, code, out)
	}

	code, out = tetherCode(t, "validate", filepath.Join(testenv.Root(), "examples", "review-loop.yaml"))
	assert.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "ok")
}

// The lifecycle commands on a real server: status from the run store with
// no worker up, checkpoints, rewind (checkpoint first, then blobs), fork
// (no refs) and delete (refused while open, then everything under the run).
func TestRunLifecycleCommands(t *testing.T) {
	h, _ := fileHarness(t)
	id := "lifecycle"
	run := h.start(id, persistGraph(t, "scripted"), nil)
	q := h.waitQuestion(id)
	h.answer(id, q.ID, "revise")
	q = h.waitQuestion(id)
	require.Equal(t, "judge-2", q.ID)

	// delete refuses an open run.
	h.useCLI(t)
	code, out := tetherCode(t, "delete", id)
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "still open")

	// status with no worker up answers from the run store.
	h.stopWorker()
	code, out = tetherCode(t, "status", id)
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "run store")
	assert.Contains(t, out, "judge-2")

	code, out = tetherCode(t, "checkpoints", id)
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "waiting")

	// Finish the run, then rewind it to the checkpoint after the first
	// writer visit.
	h.startWorker()
	h.answer(id, q.ID, "approve")
	_, err := h.result(run)
	require.NoError(t, err)
	infos, err := h.runs.List(context.Background(), id)
	require.NoError(t, err)
	first, err := h.runs.Get(context.Background(), id, infos[0].Seq)
	require.NoError(t, err)
	require.Equal(t, 1, first.Visits["writer"])
	latest, err := h.runs.Latest(context.Background(), id)
	require.NoError(t, err)
	// The newest blob of the latest slot (a part after the first visit's,
	// or a new base) is one only checkpoints after the first named.
	refs := latest.NodeSessions["writer"].Refs()
	dropped := refs[len(refs)-1]
	kept := first.NodeSessions["writer"].StateRef
	require.NotEqual(t, dropped, kept)

	code, out = tetherCode(t, "rewind", id, "--to", "1")
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "rewound to checkpoint 1")
	_, err = h.blobs.Stat(context.Background(), dropped)
	assert.Error(t, err, "the blob only later checkpoints named is gone")
	rewound, err := h.runs.Get(context.Background(), id, latest.Seq+1)
	require.NoError(t, err, "the rewind checkpoint was written")
	assert.Equal(t, kept, rewound.NodeSessions["writer"].StateRef)
	assert.Equal(t, "rewind", rewound.Lineage.Kind)

	q = h.waitQuestion(id)
	h.answer(id, q.ID, "approve")
	_, err = h.result(h.c.GetWorkflow(context.Background(), id, ""))
	require.NoError(t, err)

	// fork starts a new run with no refs.
	code, out = tetherCode(t, "fork", id, "--at", "1", "--id", "forked")
	require.Equal(t, cli.ExitOK, code, out)
	q = h.waitQuestion("forked")
	h.answer("forked", q.ID, "approve")
	_, err = h.result(h.c.GetWorkflow(context.Background(), "forked", ""))
	require.NoError(t, err)
	fcp, err := h.runs.Latest(context.Background(), "forked")
	require.NoError(t, err)
	assert.Equal(t, "fork", fcp.Lineage.Kind)

	// delete removes every checkpoint and blob of the run.
	code, out = tetherCode(t, "delete", id)
	require.Equal(t, cli.ExitOK, code, out)
	assert.Regexp(t, `deleted: \d+ checkpoint\(s\), \d+ session blob\(s\)`, out)
	keys, err := h.blobs.List(context.Background(), "runs/"+id+"/")
	require.NoError(t, err)
	assert.Empty(t, keys)

	// A graph drawn with the forked run's path.
	code, out = tetherCode(t, "graph", filepath.Join(testenv.Root(), "examples", "review-loop.yaml"), "--format", "dot")
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, `"writer" -> "judge"`)

	// With no file, the graph a run executes, as its checkpoint holds it:
	// printed as a graph file, it reads back as the graph the run started
	// with.
	code, out = tetherCode(t, "graph", "--run", "forked", "--format", "yaml")
	require.Equal(t, cli.ExitOK, code, out)
	printed, err := graph.Parse([]byte(out), "printed.yaml")
	require.NoError(t, err, out)
	want, err := graph.Encode(persistGraph(t, "scripted"))
	require.NoError(t, err)
	again, err := graph.Encode(printed)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(again))
	code, out = tetherCode(t, "graph", "--run", "forked")
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "flowchart")
	code, out = tetherCode(t, "graph")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "--run RUN")
}

// Item 5: a canceled run says `canceled` (TetherStatus and its last
// checkpoint), so the README's "runs waiting for a person" query no
// longer finds it, and `tether resume` continues it. A terminated run
// cannot update itself: the docs' queries filter on ExecutionStatus,
// which leaves it out too.
func TestCanceledRunLeavesTheWaitingQuery(t *testing.T) {
	h, dir := fileHarness(t)
	file := graphFile(t, "ask")
	for _, id := range []string{"a2", "a3"} {
		h.tether(t, dir, "run", file, "--id", id)
		h.waitQuestion(id)
	}
	waiting := `TetherStatus="waiting" AND ExecutionStatus="Running"`
	h.waitListed(waiting, "a2", "a3")

	out := h.tether(t, dir, "cancel", "a2")
	assert.Contains(t, out, "run a2 canceled; continue it with `tether resume a2`")
	h.waitListed(`TetherStatus="canceled"`, "a2")
	cp, err := h.runs.Latest(context.Background(), "a2")
	require.NoError(t, err)
	assert.Equal(t, runstore.StatusCanceled, cp.Status)
	h.recordHistory("cancel-status", "a2")

	// Terminated: TetherStatus stays "waiting", ExecutionStatus does not.
	require.NoError(t, h.c.TerminateWorkflow(context.Background(), "a3", "", "by hand"))
	h.waitListed(waiting)
	h.waitListed(`TetherStatus="waiting"`, "a3")

	// The canceled run goes on from its checkpoint: it asks again.
	out = h.tether(t, dir, "resume", "a2")
	assert.Contains(t, out, "resumed")
	q := h.waitQuestion("a2")
	h.answer("a2", q.ID, "yes")
	_, err = h.result(h.c.GetWorkflow(context.Background(), "a2", ""))
	require.NoError(t, err)
}

// waitListed waits until query lists exactly the runs ids.
func (h *harness) waitListed(query string, ids ...string) {
	h.t.Helper()
	var found []string
	ok := assert.Eventually(h.t, func() bool {
		resp, err := h.c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return false
		}
		found = nil
		for _, e := range resp.GetExecutions() {
			found = append(found, e.GetExecution().GetWorkflowId())
		}
		slices.Sort(found)
		return slices.Equal(found, ids)
	}, time.Minute, 200*time.Millisecond)
	if !ok {
		h.t.Fatalf("query %s lists %v, want %v", query, found, ids)
	}
}

// Item 1: a run id names one run. `tether run` refuses an id that Temporal
// knows (closed or open) or that the run store holds checkpoints of,
// saying which and what to do, and starts nothing; a GraphRun a plain
// client starts under such an id fails before its first visit with the
// same reason; `tether delete` frees the id.
func TestRunIDNamesOneRun(t *testing.T) {
	h, dir := fileHarness(t)
	tools := graphFile(t, "tool-loop")
	other := graphFile(t, "other")
	h.tether(t, dir, "run", tools, "--id", "b1", "--follow")
	before, err := h.runs.List(context.Background(), "b1")
	require.NoError(t, err)

	// A closed run's id: refused, nothing started.
	code, out := tetherCode(t, "run", other, "--id", "b1", "--follow")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `run id taken: Temporal has run "b1" (completed, graph "tool-loop")`)
	assert.Contains(t, out, "tether delete b1")
	assert.NotContains(t, out, "started")
	assert.Equal(t, 1, h.executions("b1"), "Temporal still has one b1")

	// An open run's id: refused, its input not silently dropped.
	h.tether(t, dir, "run", other, "--id", "open-1")
	h.waitQuestion("open-1")
	code, out = tetherCode(t, "run", other, "--id", "open-1", "--input", "x=1")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `Temporal has run "open-1" (running, graph "other") and it is still open`)

	// A plain client's GraphRun under b1 fails at its start, before any
	// visit, with the same reason, and writes nothing to b1's checkpoints.
	g, err := graph.ParseFile(other)
	require.NoError(t, err)
	run, err := h.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "b1", TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: "b1", Graph: g})
	require.NoError(t, err)
	_, err = h.result(run)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	assert.Equal(t, runapi.ErrTypeRunIDTaken, appErr.Type())
	assert.Contains(t, appErr.Message(), `run id taken: the run store holds 6 checkpoint(s) of run "b1" (graph "tool-loop", completed)`)
	after, err := h.runs.List(context.Background(), "b1")
	require.NoError(t, err)
	assert.Equal(t, before, after)
	assert.Equal(t, 0, h.activities("b1", run.GetRunID()), "no visit ran")
	h.recordHistory("run-id-taken", "b1")

	// Temporal forgot the run but the store has it: still refused.
	h.tether(t, dir, "run", tools, "--id", "s1", "--follow")
	h.deleteExecutions("s1")
	code, out = tetherCode(t, "run", other, "--id", "s1")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `run id taken: the run store holds 6 checkpoint(s) of run "s1"`)

	// `tether delete` frees the id, in the store and in Temporal.
	out = h.tether(t, dir, "delete", "b1")
	assert.Contains(t, out, "2 execution(s) in Temporal")
	out = h.tether(t, dir, "run", tools, "--id", "b1", "--follow")
	assert.Contains(t, out, "run b1 completed")

	// fork --id refuses a taken id too.
	code, out = tetherCode(t, "fork", "b1", "--id", "s1")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "run id taken")
}

// executions counts the executions Temporal has of workflow id.
func (h *harness) executions(id string) int {
	h.t.Helper()
	resp, err := h.c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowId = '" + id + "'"})
	require.NoError(h.t, err)
	return len(resp.GetExecutions())
}

// activities counts the activity tasks scheduled in one execution.
func (h *harness) activities(id, runID string) int {
	h.t.Helper()
	it := h.c.GetWorkflowHistory(context.Background(), id, runID, false, 0)
	n := 0
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(h.t, err)
		if ev.GetActivityTaskScheduledEventAttributes() != nil {
			n++
		}
	}
	return n
}

// deleteExecutions removes every execution of id from Temporal, as
// retention would.
func (h *harness) deleteExecutions(id string) {
	h.t.Helper()
	resp, err := h.c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowId = '" + id + "'"})
	require.NoError(h.t, err)
	for _, e := range resp.GetExecutions() {
		_, err := h.c.WorkflowService().DeleteWorkflowExecution(context.Background(), &workflowservice.DeleteWorkflowExecutionRequest{Namespace: "default", WorkflowExecution: e.GetExecution()})
		require.NoError(h.t, err)
	}
	require.Eventually(h.t, func() bool {
		_, err := h.c.DescribeWorkflow(context.Background(), id, "")
		return err != nil
	}, runWait, 100*time.Millisecond)
}

// Items 2 and 3: the one rule for rewind. A rewind to 3 writes checkpoint
// 10 and deletes what only 4-9 named; those are listed as dropped by it,
// and rewind --to, fork --at and workspace --at refuse them with that
// reason, while 3 and 10 stay whole. A rewind of a completed run to the
// checkpoint it ended at is refused: nothing would run.
func TestRewindDropsLaterCheckpointsAndEveryCommandKnows(t *testing.T) {
	h, dir := fileHarness(t)
	file := graphFile(t, "four-drafts")
	h.tether(t, dir, "run", file, "--id", "a1", "--follow")
	infos, err := h.runs.List(context.Background(), "a1")
	require.NoError(t, err)
	require.Len(t, infos, 9)

	out := h.tether(t, dir, "rewind", "a1", "--to", "3")
	assert.Regexp(t, `rewound to checkpoint 3 \(new checkpoint 10, [1-9]\d* blobs? dropped\)`, out)
	_, err = h.result(h.c.GetWorkflow(context.Background(), "a1", ""))
	require.NoError(t, err)

	out = h.tether(t, dir, "checkpoints", "a1")
	for seq := 4; seq <= 9; seq++ {
		assert.Regexp(t, fmt.Sprintf(`(?m)^%d +dropped +dropped by the rewind to 3 \(checkpoint 10\)$`, seq), out)
	}
	assert.Regexp(t, `(?m)^3 +running +check`, out)
	assert.Regexp(t, `(?m)^10 +running +check`, out)

	reason := "the rewind to checkpoint 3, which wrote checkpoint 10, dropped checkpoints 4 to 9"
	for _, args := range [][]string{
		{"fork", "a1", "--at", "7", "--id", "f7"},
		{"rewind", "a1", "--to", "8"},
		{"workspace", "a1", "--at", "7", "export", filepath.Join(t.TempDir(), "x")},
	} {
		code, out := tetherCode(t, args...)
		assert.Equal(t, cli.ExitUsage, code, "%v: %s", args, out)
		assert.Contains(t, out, reason, "%v", args)
	}
	assert.Equal(t, 0, h.executions("f7"), "the refused fork started nothing")

	// The whole ones work: the rewind's own checkpoint and its target.
	export := filepath.Join(t.TempDir(), "at10")
	h.tether(t, dir, "workspace", "a1", "--at", "10", "export", export)
	got, err := os.ReadFile(filepath.Join(export, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "draft 2", string(got))
	out = h.tether(t, dir, "fork", "a1", "--at", "3", "--id", "f3", "--follow")
	assert.Contains(t, out, "run f3 completed")

	// The rewound run completed again; rewinding it to its end is refused.
	infos, err = h.runs.List(context.Background(), "a1")
	require.NoError(t, err)
	last := infos[len(infos)-1].Seq
	code, out := tetherCode(t, "rewind", "a1", "--to", fmt.Sprint(last))
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Regexp(t, regexp.QuoteMeta(fmt.Sprintf("the run ended at checkpoint %d (completed) with nothing left to visit", last)), out)
	st := h.tether(t, dir, "status", "a1")
	assert.Contains(t, st, "status:     completed", "still completed, not failed")
}

package e2e

import (
	"context"
	"errors"
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
)

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

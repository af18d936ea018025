package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/tether-run/tether/internal/runstore"
)

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

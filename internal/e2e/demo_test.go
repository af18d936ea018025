package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReviewLoopDemo runs examples/review-loop.yaml — the graph `make run`
// shows — on a real dev server and worker: the persist writer loops with
// the judge, the human approval is answered by update, and the run ends
// with the writer remembering its earlier turns. Its history is what
// `make histories` records as review-loop.json.
func TestReviewLoopDemo(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	run := h.start("review-loop-e2e", loadGraph(t, "examples/review-loop.yaml"), nil)

	q := h.waitQuestion(run.GetID())
	require.Equal(t, "approve-1", q.ID)
	require.Equal(t, "Publish draft?", q.Text)
	h.answer(run.GetID(), q.ID, "yes")

	res, err := h.result(run)
	require.NoError(t, err)
	require.Equal(t, "writer>judge>writer>judge>writer>judge>approve>done", pathString(res))

	cp, err := h.runs.Latest(t.Context(), run.GetID())
	require.NoError(t, err)
	require.Equal(t, "completed", cp.Status)
	require.Equal(t, "draft v3 (I remember 2 earlier turns)", cp.Outputs["writer"]["text"], fmt.Sprint(cp.Outputs["writer"]))
	require.Equal(t, cp.Outputs["writer"]["_session_id"], cp.NodeSessions["writer"].SessionID)
	h.recordHistory("review-loop-questions-first", run.GetID())
}

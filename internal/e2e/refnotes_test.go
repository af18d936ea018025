package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/converter"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/blobref"
)

// faultyGets fails the first reads whose key holds match, as a store
// that is failing does: its error names the key.
type faultyGets struct {
	blob.Store
	match  string
	mu     sync.Mutex
	left   int
	failed []string
}

func (f *faultyGets) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	f.mu.Lock()
	fail := f.left > 0 && strings.Contains(key, f.match)
	if fail {
		f.left--
		f.failed = append(f.failed, key)
	}
	f.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("blob: get %s: input/output error", key)
	}
	return f.Store.Get(ctx, key)
}

// TestNoRefOnAnyNote (security finding 5): a blob key planted in each
// source a note quotes (a store fault's error, an inbound _session_id, a
// tool's output delivered as one) reaches none of the places that
// outlive the blob or leave the worker: the nodes' outputs and loop
// snapshots, the path's steps, the agents' prompts, the Web UI's
// summaries of every step and the run's details. The tool's own output is
// what it printed, and stays so: Tether does not rewrite a tool's data.
func TestNoRefOnAnyNote(t *testing.T) {
	h := newHarness(t, "")
	fault := &faultyGets{Store: h.blobs, match: "/sessions/writer/", left: 1}
	h.workerBlobs = fault
	h.startWorker()
	g := testGraph(t, "ref-free-notes")
	const id = "ref-free-1"
	run := h.start(id, g, nil)
	for round := 1; round <= 3; round++ {
		q := h.waitQuestion(id)
		// A new worker, whose empty root holds no session: the writer's
		// next visit fetches its slot from the store.
		h.stopWorker()
		h.startWorker()
		answer := "again"
		if round == 3 {
			answer = "done"
		}
		h.answer(id, q.ID, answer)
	}
	res, err := h.result(run)
	require.NoError(t, err)
	assert.Equal(t, "writer>leak>reader>gate>writer>leak>reader>gate>writer>leak>reader>gate>done", pathString(res))
	require.Len(t, fault.failed, 1, "the writer's second visit met the store fault")
	h.recordHistory("ref-free-notes", id)

	cp, err := h.runs.Latest(t.Context(), id)
	require.NoError(t, err)
	noRef := func(what string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		require.NoError(t, err)
		assert.False(t, blobref.In(string(b)), "%s names a blob key: %s", what, b)
	}
	// The notes were written, and say what happened.
	snapshot := func(node string, visit int) map[string]any {
		t.Helper()
		for _, s := range cp.LoopSnapshots {
			if s.Node == node && s.Visit == visit {
				return s.Output
			}
		}
		t.Fatalf("no loop snapshot of %s visit %d", node, visit)
		return nil
	}
	retry, _ := snapshot("writer", 2)[agent.RetryNoteKey].(string)
	assert.Contains(t, retry, "(it failed: read session blob for node \"writer\": blob: get a session blob of the run: input/output error)")
	note, _ := snapshot("reader", 1)[activities.SessionNoteKey].(string)
	assert.Contains(t, note, "the inbound session a session blob of the run was not resumed")
	for node, out := range cp.Outputs {
		if node != "leak" {
			noRef("the output of "+node, out)
		}
	}
	var snapshots int
	for _, s := range cp.LoopSnapshots {
		if s.Node != "leak" {
			snapshots++
			noRef(fmt.Sprintf("the loop snapshot of %s visit %d", s.Node, s.Visit), s.Output)
		}
	}
	assert.GreaterOrEqual(t, snapshots, 4)
	for _, s := range cp.Path {
		if s.Node != "leak" {
			noRef(fmt.Sprintf("the step of %s visit %d", s.Node, s.Visit), s)
		}
	}
	// The prompt: the scripted agents say theirs back; the retried visit
	// was told before its prompt.
	text, _ := snapshot("writer", 2)["text"].(string)
	assert.Contains(t, text, "an earlier attempt of this very turn was interrupted")
	noRef("the writer's second prompt", text)

	// Every step's summary in the Web UI, and the run's details.
	summaries := 0
	dc := converter.GetDefaultDataConverter()
	it := h.c.GetWorkflowHistory(t.Context(), id, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if p := ev.GetUserMetadata().GetSummary(); p != nil {
			var s string
			require.NoError(t, dc.FromPayload(p, &s))
			summaries++
			assert.False(t, blobref.In(s), "event %d (%s) is summarised as %q", ev.GetEventId(), ev.GetEventType(), s)
		}
	}
	assert.Greater(t, summaries, 10)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	v, err := h.c.QueryWorkflow(ctx, id, "", "__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	assert.Contains(t, md.GetCurrentDetails(), "Visits that ran again")
	noRef("the run's details", md.GetCurrentDetails())
}

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/tether-run/tether/internal/runapi"
)

// TestRunsAreLegibleInTemporal: a run started with `tether run` carries a
// summary and details, names every visit's activity, and keeps search
// attributes that `temporal workflow list --query` uses to find the runs
// waiting for a person.
func TestRunsAreLegibleInTemporal(t *testing.T) {
	h, dir := fileHarness(t)
	graphFile := graphFile(t, "ws-loop")
	id := "legible"
	out := h.tether(t, dir, "run", graphFile, "--id", id, "--input", "topic=otters")
	require.Contains(t, out, "started")
	h.waitQuestion(id)

	// Found by query, as `temporal workflow list --query 'TetherStatus="waiting"'` would.
	var found []string
	require.Eventually(t, func() bool {
		resp, err := h.c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: `TetherStatus="waiting" AND TetherGraph="ws-loop"`,
		})
		if err != nil {
			return false
		}
		found = nil
		for _, e := range resp.Executions {
			found = append(found, e.GetExecution().GetWorkflowId())
		}
		return len(found) == 1
	}, time.Minute, 200*time.Millisecond, "the waiting run is found by its search attributes")
	assert.Equal(t, []string{id}, found)

	dw, err := h.c.DescribeWorkflow(context.Background(), id, "")
	require.NoError(t, err)
	d := dw.RawResponse
	sa := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	str := func(name string) string {
		var v any
		require.NoError(t, converter.GetDefaultDataConverter().FromPayload(sa[name], &v), name)
		if l, ok := v.([]any); ok {
			var parts []string
			for _, x := range l {
				parts = append(parts, x.(string))
			}
			return strings.Join(parts, ",")
		}
		return v.(string)
	}
	assert.Equal(t, "ws-loop", str("TetherGraph"))
	assert.Equal(t, "gate", str("TetherNode"))
	assert.Equal(t, "waiting", str("TetherStatus"))
	assert.Equal(t, "scripted", str("TetherBackends"))

	var summary, details string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(d.GetExecutionConfig().GetUserMetadata().GetSummary(), &summary))
	assert.Equal(t, "tether · ws-loop · topic=otters", summary)
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(d.GetExecutionConfig().GetUserMetadata().GetDetails(), &details))
	assert.Contains(t, details, "Inputs:\n- topic: otters")
	// The Web UI reads current details through the SDK's metadata query.
	v, err := h.c.QueryWorkflow(context.Background(), id, "", "__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	current := md.GetCurrentDetails()
	assert.Contains(t, current, "gate asks (gate-1): Approve?")
	assert.Contains(t, current, "tether answer legible gate-1 TEXT")

	// Every visit's activity and checkpoint is named in the history.
	joined, _ := historySummaries(t, h, id)
	assert.Contains(t, joined, "writer visit 1 · scripted · persist")
	assert.Contains(t, joined, "check visit 1 · tool · sh -c cat notes.txt; echo; ls -R")
	assert.Contains(t, joined, "checkpoint ")

	h.answer(id, h.waitQuestion(id).ID, "approve")
	_, err = h.result(h.c.GetWorkflow(context.Background(), id, ""))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		dw, err := h.c.DescribeWorkflow(context.Background(), id, "")
		if err != nil {
			return false
		}
		d := dw.RawResponse
		var v string
		_ = converter.GetDefaultDataConverter().FromPayload(d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()["TetherStatus"], &v)
		return v == "completed"
	}, 30*time.Second, 200*time.Millisecond)
}

// TestBlobDeletesAreNamed: the local activity that deletes a superseded
// session blob carries a summary in the history, as every other step of a
// run does, so the Web UI says whose blobs it removed (by node, never by
// key: no event names a ref).
func TestBlobDeletesAreNamed(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	g := testGraph(t, "deletes")
	opts := testRunOptions
	opts.SessionHistory = -1 // keep no earlier slot: each new one supersedes the last
	run, err := h.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "deletes", TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: "deletes", Graph: g, Options: opts})
	require.NoError(t, err)
	_, err = h.result(run)
	require.NoError(t, err)
	joined, unnamed := historySummaries(t, h, "deletes")
	// Visit 2 adds a part to visit 1's slot and supersedes nothing; a slot
	// this small then outweighs its base in parts, so visit 3 packs whole
	// and its slot supersedes the base and the part, in one named delete.
	var deletes []string
	for line := range strings.Lines(joined) {
		if strings.HasPrefix(line, "delete ") {
			deletes = append(deletes, line)
			assert.Contains(t, line, " of writer", "a delete names whose blobs it removes")
			assert.NotContains(t, line, "runs/deletes/", "a summary is an event the Web UI shows, and no event names a ref")
		}
	}
	assert.NotEmpty(t, deletes, joined)
	assert.Zero(t, unnamed, "every local activity is named in the Web UI")
}

// historySummaries is every summary in the run's history, one a line, and
// the number of local activities recorded without one.
func historySummaries(t *testing.T, h *harness, id string) (joined string, unnamedLocal int) {
	t.Helper()
	var summaries []string
	it := h.c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if md := e.GetUserMetadata().GetSummary(); md != nil {
			var s string
			require.NoError(t, converter.GetDefaultDataConverter().FromPayload(md, &s))
			summaries = append(summaries, s)
		} else if e.GetEventType() == enumspb.EVENT_TYPE_MARKER_RECORDED && e.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
			unnamedLocal++
		}
	}
	return strings.Join(summaries, "\n"), unnamedLocal
}

package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
)

// A new run asks for its workflow's changes once (the baseline), not one
// change at a time: one version marker, and one upsert of the
// TemporalChangeVersion search attribute, where each first GetVersion
// used to add a marker and an upsert, each upsert a write of the
// server's visibility store (a change added after the baseline adds its
// own). The run does what it did before: the writer continues its own
// conversation on its second visit.
func TestNewRunTakesTheBaselineAtOnce(t *testing.T) {
	h, dir := fileHarness(t)
	file := graphFile(t, "lean")
	out := h.tether(t, dir, "run", file, "--id", "lean-1", "--follow")
	require.Contains(t, out, "run lean-1 completed at done after 5 visits", out)
	assert.Regexp(t, `(?m)^✓ writer +visit 2 +ok .*draft 2$`, out, "the writer's second visit continued its conversation")

	events := historyOf(t, h, "lean-1")
	var versions []string
	upserts := 0
	for _, ev := range events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			a := ev.GetMarkerRecordedEventAttributes()
			if a.GetMarkerName() != "Version" {
				continue
			}
			var id string
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(a.GetDetails()["change-id"], &id))
			versions = append(versions, id)
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			if _, ok := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()["TemporalChangeVersion"]; ok {
				upserts++
			}
		}
	}
	require.NotEmpty(t, versions)
	assert.Equal(t, "baseline", versions[0], "the baseline is the run's first version marker")
	for _, old := range []string{"one-trip-visit", "run-id-check", "server-retry", "incremental-session-packs", "edge-delivery", "ended-visit", "ref-free-notes", "budget-mid-visit"} {
		assert.NotContains(t, versions, old, "a change the baseline holds is not asked for")
	}
	// Only the changes added after the baseline ask for themselves, each
	// with its own marker and upsert.
	assert.Equal(t, len(versions), upserts, "one upsert of TemporalChangeVersion per marker")
	assert.LessOrEqual(t, len(versions), 2, "the baseline, and at most a change added after it: %v", versions)
	h.recordHistory("baseline", "lean-1")
}

// historyOf reads a run's whole history.
func historyOf(t *testing.T, h *harness, id string) []*historypb.HistoryEvent {
	t.Helper()
	var out []*historypb.HistoryEvent
	it := h.c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		out = append(out, ev)
	}
	return out
}

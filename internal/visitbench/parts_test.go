package visitbench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tether-run/tether/internal/telemetry"
)

// TestSplitAddsUpToTheRun splits a one-visit history like a real one (a
// first task that checks the run id and schedules the visit, the visit,
// a task that checkpoints and completes) and checks each part, each
// sub-part, and that the parts add up to the CLI's whole time.
func TestSplitAddsUpToTheRun(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	var events []*historypb.HistoryEvent
	ev := func(ms float64, typ enumspb.EventType) {
		events = append(events, &historypb.HistoryEvent{EventId: int64(len(events) + 1), EventTime: timestamppb.New(at(ms)), EventType: typ})
	}
	ev(40, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
	ev(40, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED)
	ev(45, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED)
	ev(60, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
	ev(60, enumspb.EVENT_TYPE_MARKER_RECORDED)
	ev(61, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
	ev(62, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED)
	ev(762, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
	ev(762, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED)
	ev(770, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED)
	ev(790, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
	ev(790, enumspb.EVENT_TYPE_MARKER_RECORDED)
	ev(790, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)
	spans := []Span{
		{Name: "RunActivity:CheckRunID", Start: at(47), End: at(50)},
		{Name: "RunActivity:Visit", Start: at(63), End: at(755)},
		{Name: telemetry.PhaseRun, Start: at(64), End: at(700)},
		{Name: telemetry.PhasePack, Start: at(700), End: at(710)},
		{Name: "RunActivity:SaveCheckpoint", Start: at(772), End: at(776)},
		{Name: "RunActivity:SaveCheckpoint", Start: at(777), End: at(780)},
		// Another run's span, at a time outside every part of this one.
		{Name: "RunActivity:SaveCheckpoint", Start: at(900), End: at(950)},
	}
	parts := Split(events, spans, at(0), at(840))
	got := map[string]time.Duration{}
	var sum time.Duration
	for _, p := range parts {
		if !p.IsSub() {
			sum += p.D
		}
		got[p.Name] += p.D
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	assert.Equal(t, ms(840), sum, "the parts add up to the whole: %v", parts)
	assert.Equal(t, ms(40), got[PartStart])
	assert.Equal(t, ms(5), got[PartFirstQueued])
	assert.Equal(t, ms(15), got[PartFirstTask])
	assert.Equal(t, ms(3), got[subLocalPrefix+"CheckRunID"])
	assert.Equal(t, ms(1), got[PartDispatch])
	assert.Equal(t, ms(700), got[PartActivity])
	assert.Equal(t, ms(1), got[subActivityStart])
	assert.Equal(t, ms(636), got[phaseRunName])
	assert.Equal(t, ms(10), got["  pack"])
	assert.Equal(t, ms(700-1-636-10), got[subActivityRest])
	assert.Equal(t, ms(8), got[PartTaskQueued])
	assert.Equal(t, ms(20), got[PartTask])
	assert.Equal(t, ms(7), got[subLocalPrefix+"SaveCheckpoint"], "both checkpoints of the task, not the other run's")
	assert.Equal(t, ms(50), got[PartAfterClose])
	require.NotEmpty(t, parts)
	assert.Equal(t, PartStart, parts[0].Name, "the parts come in the order the run passed them")
	assert.Equal(t, PartAfterClose, parts[len(parts)-1].Name)
}

// TestMedianTakesEachPartsMedian: a part missing from a run counts zero.
func TestMedianTakesEachPartsMedian(t *testing.T) {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	runs := [][]Part{
		{{PartStart, ms(10)}, {PartActivity, ms(700)}, {subActivityRest, ms(5)}},
		{{PartStart, ms(30)}, {PartActivity, ms(600)}},
		{{PartStart, ms(20)}, {PartActivity, ms(900)}, {subActivityRest, ms(7)}},
	}
	assert.Equal(t, []Part{{PartStart, ms(20)}, {PartActivity, ms(700)}, {subActivityRest, ms(5)}}, Median(runs))
}

// A sub-part keeps to the part it splits, even where another part has a
// sub-part of the same name.
func TestTableKeepsSubPartsUnderTheirPart(t *testing.T) {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	a := []Part{{PartFirstTask, ms(10)}, {subTaskRest, ms(8)}, {PartTask, ms(20)}, {subTaskRest, ms(5)}}
	b := []Part{{PartFirstTask, ms(11)}, {PartTask, ms(30)}, {subLocalPrefix + "SaveCheckpoint", ms(4)}, {subTaskRest, ms(26)}}
	var out strings.Builder
	Table(&out, []string{"a", "b"}, [][]Part{a, b})
	want := "| part | a | b |\n|---|---|---|\n" +
		"| " + PartFirstTask + " | 10.0 | 11.0 |\n" +
		"| &nbsp;&nbsp;&nbsp;&nbsp;workflow code and the SDK | 8.0 |  |\n" +
		"| " + PartTask + " | 20.0 | 30.0 |\n" +
		"| &nbsp;&nbsp;&nbsp;&nbsp;workflow code and the SDK | 5.0 | 26.0 |\n" +
		"| &nbsp;&nbsp;&nbsp;&nbsp;local activity SaveCheckpoint |  | 4.0 |\n"
	assert.Equal(t, want, out.String())
}

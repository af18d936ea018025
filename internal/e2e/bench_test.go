package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// benchLoop runs one graph whose loop node repeats b.N times and reports
// the wall time per visit of that node, on the real dev server with a
// real worker and a file blob store.
func benchLoop(b *testing.B, src string) {
	benchLoopIn(b, src, 0)
}

// benchLoopIn runs the loop in a workspace that starts with files files of
// 1 KiB (0: empty).
func benchLoopIn(b *testing.B, src string, files int) {
	h := newHarness(b, "")
	h.startWorker()
	g, err := graph.Parse([]byte(fmt.Sprintf(src, b.N)), "bench.yaml")
	require.NoError(b, err)
	id := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var ws *runstore.WorkspaceState
	if files > 0 {
		src := b.TempDir()
		for i := range files {
			p := filepath.Join(src, fmt.Sprintf("d%02d", i/100), fmt.Sprintf("f%04d.txt", i))
			require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(b, os.WriteFile(p, bytes.Repeat([]byte{byte('a' + i%26)}, 1024), 0o644))
		}
		ws, _, err = workspace.Import(context.Background(), h.blobs, id, workspace.Source{From: src}, workspace.Limits{}, time.Now())
		require.NoError(b, err)
	}
	b.ResetTimer()
	start := time.Now()
	run, err := h.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Workspace: ws})
	require.NoError(b, err)
	require.NoError(b, run.Get(context.Background(), nil))
	b.StopTimer()
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/visit")
	if steady, ok := steadyVisit(b, h, id, b.N); ok {
		b.ReportMetric(steady, "steady-ms/visit")
	}
}

// steadyVisit is the time per visit after the first, from the run's
// history: from the first activity's completion to the run's. The first
// visit also starts the worker's caches (and, in a workspace, restores
// the imported files), which a long run pays once.
func steadyVisit(b *testing.B, h *harness, id string, visits int) (float64, bool) {
	if visits < 2 {
		return 0, false
	}
	var first, last time.Time
	it := h.c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(b, err)
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			if ev.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId() != "" {
				return 0, false // continued as new: the wall time stands alone
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			if first.IsZero() {
				first = ev.GetEventTime().AsTime()
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			last = ev.GetEventTime().AsTime()
		}
	}
	if first.IsZero() || last.IsZero() {
		return 0, false
	}
	return float64(last.Sub(first).Microseconds()) / 1000 / float64(visits-1), true
}

// BenchmarkToolVisit is the floor: one regular activity and one local
// checkpoint per visit.
func BenchmarkToolVisit(b *testing.B) {
	benchLoop(b, graphYAML(b, "bench-tool"))
}

// BenchmarkPersistVisit is a persist agent visit after the first: restore
// the slot on some worker, execute and pack there, commit the slot.
func BenchmarkPersistVisit(b *testing.B) {
	benchLoop(b, graphYAML(b, "bench-persist"))
}

// BenchmarkPersistWorkspaceVisit is a persist agent visit in a workspace
// of 1,000 files that it changes on every visit: restore the workspace and
// the session (skipped when the worker holds them), execute, snapshot the
// change, pack the session, commit, all in one activity.
func BenchmarkPersistWorkspaceVisit(b *testing.B) {
	benchLoopIn(b, graphYAML(b, "bench-persist-workspace"), 1000)
}

// BenchmarkToolWorkspaceVisit is a tool visit in the same workspace that
// changes nothing.
func BenchmarkToolWorkspaceVisit(b *testing.B) {
	benchLoopIn(b, graphYAML(b, "bench-tool-workspace"), 1000)
}

// BenchmarkFreshVisit is an agent visit with no session to restore.
func BenchmarkFreshVisit(b *testing.B) {
	benchLoop(b, graphYAML(b, "bench-fresh"))
}

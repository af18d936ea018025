package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/testenv/files"
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

// longLoop is a persist loop on the scripted agent that ends after visits
// visits: the long run the benchmarks time.
func longLoop(b *testing.B, visits int) *graph.Graph {
	b.Helper()
	// BenchmarkPersistVisit's loop, named long.
	g, err := graph.Parse([]byte(fmt.Sprintf(graphYAML(b, "bench-persist", "name: bench", "name: long"), visits)), "long.yaml")
	require.NoError(b, err)
	return g
}

// BenchmarkLongPersistLoop is issue 20's loop: one persist node visited b.N
// times (make bench runs 10,000) on one worker, the dev server and a file
// store. It reports the steady time per visit near the start (visits
// 100–200) and at the end (the last 100), their ratio, the largest history
// of one execution, the process's RSS and open files at the start, middle
// and end, and the bytes the run leaves in the store.
func BenchmarkLongPersistLoop(b *testing.B) {
	if b.N < 400 {
		// The first call has b.N = 1: a loop that short has no steady
		// windows, and -benchtime 10000x calls again with the real count.
		return
	}
	dir := b.TempDir()
	if keep := os.Getenv("TETHER_BENCH_STORE"); keep != "" {
		dir = keep // kept after the benchmark, to look into
	}
	h := newHarness(b, "file://"+dir)
	h.startWorker()
	g := longLoop(b, b.N)
	id := fmt.Sprintf("long-%d", time.Now().UnixNano())

	var (
		mu      sync.Mutex
		samples []procSample
	)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			mu.Lock()
			samples = append(samples, sampleProc())
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	b.ResetTimer()
	run, err := h.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g})
	require.NoError(b, err)
	firstRun := run.GetRunID() // Get follows the chain and moves it to the last
	var res runapi.GraphRunResult
	require.NoError(b, run.Get(context.Background(), &res))
	b.StopTimer()
	close(stop)
	require.Equal(b, b.N+1, res.Visits, "the loop's visits and the end's")

	done, maxEvents, executions := visitCompletions(b, h, id, firstRun)
	require.Equal(b, b.N, len(done), "one completed visit activity per visit, over %d executions", executions)
	window := func(from, to int) float64 {
		return float64(done[to-1].Sub(done[from-1]).Microseconds()) / 1000 / float64(to-from)
	}
	early, late := window(100, 200), window(b.N-100, b.N)
	b.ReportMetric(early, "early-ms/visit")
	b.ReportMetric(late, "late-ms/visit")
	b.ReportMetric(late/early, "late/early")
	b.ReportMetric(float64(maxEvents), "max-events/execution")
	b.ReportMetric(float64(executions), "executions")
	b.ReportMetric(float64(treeBytes(b, dir))/1e6, "store-MB")
	mu.Lock()
	defer mu.Unlock()
	// "start" is before the first visit; "warm" the first sample after
	// the early window (visit 200), once the worker's caches are built.
	warm := len(samples) - 1
	for i, sm := range samples {
		if !sm.at.Before(done[199]) {
			warm = i
			break
		}
	}
	for i, at := range map[string]int{"start": 0, "warm": warm, "middle": len(samples) / 2, "end": len(samples) - 1} {
		b.ReportMetric(float64(samples[at].rss)/1e6, "rss-MB-"+i)
		b.ReportMetric(float64(samples[at].fds), "fds-"+i)
	}
}

type procSample struct {
	at  time.Time
	rss int64
	fds int
}

// sampleProc reads this process's resident memory and open descriptors:
// the worker runs in the benchmark's process.
func sampleProc() procSample {
	s := procSample{at: time.Now()}
	if raw, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				s.rss = kb * 1024
			}
		}
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		s.fds = len(ents)
	}
	return s
}

// visitCompletions follows the run's chain of executions and returns when
// each visit activity completed, in order, the largest history of one
// execution, and how many executions there were.
func visitCompletions(b *testing.B, h *harness, id, runID string) (done []time.Time, maxEvents, executions int) {
	for runID != "" {
		executions++
		next, events := "", 0
		it := h.c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(b, err)
			events++
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				done = append(done, ev.GetEventTime().AsTime())
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
				next = ev.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
			}
		}
		maxEvents = max(maxEvents, events)
		runID = next
	}
	return done, maxEvents, executions
}

// treeBytes is the size of every file under dir.
func treeBytes(b *testing.B, dir string) int64 {
	var n int64
	for _, f := range files.List(b, dir) {
		fi, err := os.Stat(filepath.Join(dir, f))
		require.NoError(b, err)
		n += fi.Size()
	}
	return n
}

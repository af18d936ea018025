package e2e

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
)

// A worker that gets SIGTERM (a pod being recycled) takes no new visit,
// lets the running one finish within its grace period, and exits; the
// run's next visit waits for another worker.
func TestWorkerStopFinishesRunningVisit(t *testing.T) {
	bin, _, c, env := processRig(t, "TETHER_SHUTDOWN_GRACE=60s")
	a := startWorkerProcess(t, bin, env)

	id := "stop-finishes"
	run := startToolRun(t, c, id, "sleep 3", 30*time.Second)
	waitVisitStarted(t, c, id, 1)
	termAt := time.Now()
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	_, err := a.cmd.Process.Wait()
	require.NoError(t, err)
	assert.Less(t, time.Since(termAt), 30*time.Second, "the worker waited for its visit, not for its whole grace")

	b := startWorkerProcess(t, bin, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res))

	starts := visitStarts(t, c, id)
	require.Len(t, starts, 2, "each visit ran once: the first was not handed back")
	assert.Equal(t, workerID(a), starts[0].identity, "the running visit finished on the stopping worker")
	assert.Equal(t, workerID(b), starts[1].identity, "the stopping worker took no new visit")
	log, _ := os.ReadFile(a.log.Name())
	assert.NotContains(t, string(log), "WorkerStopping")
}

// A visit still running when the grace period ends is ended and handed
// back: another worker starts it at once, not after the heartbeat timeout
// (60 s here) that a killed worker costs.
func TestWorkerStopHandsBackAVisitAtTheDeadline(t *testing.T) {
	bin, _, c, env := processRig(t, "TETHER_SHUTDOWN_GRACE=1s")
	a := startWorkerProcess(t, bin, env)

	id := "stop-hands-back"
	run := startToolRun(t, c, id, "sleep 8", 60*time.Second)
	waitVisitStarted(t, c, id, 1)
	assert.Equal(t, workerID(a), pendingWorker(t, c, id), "the first attempt runs on the worker that will stop")
	b := startWorkerProcess(t, bin, env)
	waitPolling(t, c, runapi.WorkerQueue(workerID(b)))

	termAt := time.Now()
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	_, err := a.cmd.Process.Wait()
	require.NoError(t, err)
	waitVisitStarted(t, c, id, 2)
	restartedIn := time.Since(termAt)
	t.Logf("SIGTERM to the visit starting on another worker: %s (grace 1s)", restartedIn)
	assert.Less(t, restartedIn, 20*time.Second, "the visit was handed back, not lost until the 60 s heartbeat timeout")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res))
	// The server started the handed-back visit again itself: one
	// activity, whose second attempt ran on the other worker.
	starts := visitStarts(t, c, id)
	require.Len(t, starts, 2, "the work visit (retried by the server) and the next one")
	assert.Equal(t, int32(2), starts[0].attempt, "the handed-back visit's second attempt completed it")
	assert.Equal(t, workerID(b), starts[0].identity, "the handed-back visit ran on the other worker")
	log, _ := os.ReadFile(a.log.Name())
	assert.Contains(t, string(log), "WorkerStopping", "the stopping worker reported the visit it handed back")
}

// startToolRun starts a run of two tool nodes: `sh -c SCRIPT`, then echo.
func startToolRun(t *testing.T, c client.Client, id, script string, heartbeat time.Duration) client.WorkflowRun {
	t.Helper()
	g, err := graph.Parse([]byte(graphYAML(t, "shutdown")+script+`"]}
  - {id: after, kind: tool, run: [echo, after]}
  - {id: done, kind: end}
edges:
  - {from: work, to: after}
  - {from: after, to: done}
`), "shutdown.yaml")
	require.NoError(t, err)
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Options: runapi.Options{HeartbeatTimeout: heartbeat}})
	require.NoError(t, err)
	return run
}

type visitStart struct {
	at       time.Time
	identity string
	// attempt is the attempt that completed the activity: the server
	// records only that one's start in the history.
	attempt int32
}

// visitStarts lists the run's activity starts, in order, with the worker
// that started each.
func visitStarts(t *testing.T, c client.Client, id string) []visitStart {
	t.Helper()
	var out []visitStart
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED {
			a := ev.GetActivityTaskStartedEventAttributes()
			out = append(out, visitStart{at: ev.GetEventTime().AsTime(), identity: a.GetIdentity(), attempt: a.GetAttempt()})
		}
	}
	return out
}

// waitVisitStarted waits until the run's n-th visit attempt is running on
// a worker. A completed activity's history records its last attempt; a
// pending one's attempts are in its pending state, so that is read too.
func waitVisitStarted(t *testing.T, c client.Client, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		dw, err := c.DescribeWorkflow(context.Background(), id, "")
		require.NoError(t, err)
		started := 0
		for _, s := range visitStarts(t, c, id) {
			started += int(max(s.attempt, 1))
		}
		for _, p := range dw.RawResponse.GetPendingActivities() {
			switch {
			case p.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED:
				started += int(p.GetAttempt())
			case p.GetAttempt() > 1:
				started += int(p.GetAttempt()) - 1
			}
		}
		if started >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("run %s: visit attempt %d never started", id, n)
}

// pendingWorker names the worker running the run's pending visit.
func pendingWorker(t *testing.T, c client.Client, id string) string {
	t.Helper()
	dw, err := c.DescribeWorkflow(context.Background(), id, "")
	require.NoError(t, err)
	for _, p := range dw.RawResponse.GetPendingActivities() {
		if p.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
			return p.GetLastWorkerIdentity()
		}
	}
	return ""
}

// waitPolling waits until a worker polls queue.
func waitPolling(t *testing.T, c client.Client, queue string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		d, err := c.DescribeTaskQueue(context.Background(), queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
		if err == nil && len(d.GetPollers()) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no worker polls %s", queue)
}

// workerID is the TETHER_WORKER_ID startWorkerProcess gave w.
func workerID(w *workerProcess) string { return filepath.Base(filepath.Dir(w.log.Name())) }

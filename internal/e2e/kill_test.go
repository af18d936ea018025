package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
	"github.com/tether-run/tether/internal/testenv"
)

// workerProcess is a real tether-worker process.
type workerProcess struct {
	cmd *exec.Cmd
	log *os.File
}

// workerBin is the tether-worker the tests run as a process.
var workerBin = buildOnce("tether-worker", "worker")

// confineBeside puts the confine helper beside the worker, where `make
// build` puts it, once.
var confineBeside sync.Once

// buildWorker returns the tether-worker binary with its confine helper
// beside it.
func buildWorker(t *testing.T) string {
	t.Helper()
	bin, err := workerBin()
	require.NoError(t, err)
	var copyErr error
	confineBeside.Do(func() {
		helper, err := os.ReadFile(sandboxtest.Helper(t))
		if err == nil {
			err = os.WriteFile(filepath.Join(filepath.Dir(bin), "tether-confine"), helper, 0o755)
		}
		copyErr = err
	})
	require.NoError(t, copyErr)
	require.FileExists(t, filepath.Join(filepath.Dir(bin), "tether-confine"), "the confine helper beside the worker")
	return bin
}

func startWorkerProcess(t *testing.T, bin string, env []string) *workerProcess {
	t.Helper()
	dir := t.TempDir()
	logf, err := os.Create(filepath.Join(dir, "worker.log"))
	require.NoError(t, err)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env,
		"TETHER_STATE_DIR="+filepath.Join(dir, "state"),
		"TETHER_WORK_DIR="+filepath.Join(dir, "work"),
		"TETHER_WORKER_ID="+filepath.Base(dir),
		// Unversioned, as the tests' own workers are (e2eVersioning).
		"TETHER_VERSIONING=off",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	w := &workerProcess{cmd: cmd, log: logf}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("worker log %s:\n%s", logf.Name(), b)
		}
		logf.Close()
	})
	return w
}

// TestWorkerKilledMidVisit stops the worker process while a persist visit
// is inside the CLI: with SIGKILL, as a node dying takes a pod (the visit's
// heartbeats stop), and with SIGTERM, as a pod being recycled (after its
// shutdown grace, 1 s here, the worker ends the CLI and reports
// WorkerStopping). Either way the workflow restarts
// the visit on the other worker, which restores the conversation from the
// blob store and completes it.
func TestWorkerKilledMidVisit(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { killMidVisit(t, sig) })
	}
}

// killRig is what a test that kills worker processes needs: the worker
// binary, a dev server, Claude Code against the fake model, a file store,
// and the environment of a worker process running them.
type killRig struct {
	bin   string
	srv   *testenv.Server
	c     client.Client
	fake  *fakemodel.Server
	store string
	env   []string
}

// newKillRig builds the worker (before HOME moves: go keeps its caches
// under HOME) and sets up the rest; model names the CLI runs' model, so
// that their processes can be told from other tests'.
func newKillRig(t *testing.T, model string) *killRig {
	k := &killRig{bin: buildWorker(t), srv: testenv.DevServer(t)}
	k.c = k.srv.Client(t)
	cliBin := clitest.Isolate(t)
	k.fake = fakemodel.Start(t)
	k.store = t.TempDir()
	k.env = []string{
		"TEMPORAL_ADDRESS=" + k.srv.Address,
		"TETHER_BLOB_URL=file://" + k.store,
		"TETHER_CLI_BIN=" + cliBin,
		"ANTHROPIC_BASE_URL=" + k.fake.URL(),
		"ANTHROPIC_API_KEY=" + k.fake.Key(),
		"TETHER_MODEL_CLAUDE_CODE=" + model,
	}
	return k
}

func killMidVisit(t *testing.T, sig syscall.Signal) {
	k := newKillRig(t, killModel)
	bin, srv, c, fake, store := k.bin, k.srv, k.c, k.fake, k.store
	env := append(k.env, "TETHER_SHUTDOWN_GRACE=1s")
	a := startWorkerProcess(t, bin, env)

	g := testGraph(t, "kill")
	id := "killed-mid-visit"
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Options: runapi.Options{HeartbeatTimeout: 5 * time.Second, WorkerLostAfter: 10 * time.Second}})
	require.NoError(t, err)

	h := &harness{t: t, srv: srv, c: c}
	q := h.waitQuestion(id)
	h.answer(id, q.ID, "again")

	// Wait until visit 2 is inside the CLI: the fake model has its prompt.
	deadline := time.Now().Add(2 * time.Minute)
	for !sawPrompt(fake, "draft 2") {
		require.True(t, time.Now().Before(deadline), "visit 2 never reached the model")
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, a.cmd.Process.Signal(sig))
	_, _ = a.cmd.Process.Wait()
	// The CLI the worker ran does not outlive it (Pdeathsig, or the
	// graceful stop's group kill).
	deadline = time.Now().Add(10 * time.Second)
	for len(clitest.Processes(killModel)) > 0 {
		require.True(t, time.Now().Before(deadline), "the killed worker's CLI is still running: %v", clitest.Processes(killModel))
		time.Sleep(100 * time.Millisecond)
	}
	if sig == syscall.SIGTERM {
		b, err := os.ReadFile(a.log.Name())
		require.NoError(t, err)
		require.Contains(t, string(b), "WorkerStopping", "a graceful stop reports the interrupted visit")
	}
	startWorkerProcess(t, bin, env)

	q = h.waitQuestion(id)
	require.Equal(t, "judge-2", q.ID, "visit 2 finished on the second worker")
	h.answer(id, q.ID, "done")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res))
	out := fmt.Sprint(res.Path)
	require.Equal(t, 2, strings.Count(out, "writer"), out)

	blobs, err := blob.Open(context.Background(), "file://"+store)
	require.NoError(t, err)
	cp, err := runstore.New(blobs).Latest(context.Background(), id)
	require.NoError(t, err)
	text, _ := cp.Outputs["writer"]["text"].(string)
	require.Contains(t, text, "turn 2", "the restarted visit continued the conversation: %s", text)
	require.Contains(t, text, "draft 1")

	// Every session blob left is one a checkpoint names: the lost
	// attempt's keys went once the visit was committed.
	named := cp.Refs()
	left, err := blobs.List(context.Background(), runstore.RunPrefix(id)+"sessions/")
	require.NoError(t, err)
	require.NotEmpty(t, left)
	for _, b := range left {
		assert.Contains(t, named, b.Key, "session blob %s is named by no checkpoint", b.Key)
	}
	if sig == syscall.SIGKILL {
		h.recordHistory("lost-worker-retry-sweep", id)
	}
}

// killModel names the model of this test's CLI runs, so that its processes
// can be told from those of tests running beside it.
const killModel = "claude-kill-test-1"

func sawPrompt(f *fakemodel.Server, s string) bool {
	for _, r := range f.Requests() {
		for _, p := range r.Prompts {
			if strings.Contains(p, s) {
				return true
			}
		}
	}
	return false
}

// TestVisitOutlivesLostWorkers kills the worker under one tool visit four
// times in a row, one more than a run restarts a failing visit, starting a
// new worker with empty disks at once each time. The server starts the
// visit again itself after each heartbeat timeout, as the same activity's
// next attempt (no workflow task, no wait on the dead worker's sticky
// queue), and the fifth attempt completes the run.
func TestVisitOutlivesLostWorkers(t *testing.T) {
	bin := buildWorker(t)
	srv := testenv.DevServer(t)
	c := srv.Client(t)
	env := []string{"TEMPORAL_ADDRESS=" + srv.Address, "TETHER_BLOB_URL=file://" + t.TempDir()}
	g := testGraph(t, "lost-workers")
	const heartbeat = 2 * time.Second
	id := "lost-workers"
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Options: runapi.Options{HeartbeatTimeout: heartbeat}})
	require.NoError(t, err)

	w := startWorkerProcess(t, bin, env)
	const kills = 4
	for attempt := int32(1); attempt <= kills; attempt++ {
		waitAttempt(t, c, id, attempt)
		killed := time.Now()
		require.NoError(t, w.cmd.Process.Kill())
		_, _ = w.cmd.Process.Wait()
		w = startWorkerProcess(t, bin, env)
		waitAttempt(t, c, id, attempt+1)
		t.Logf("attempt %d killed; attempt %d started %s later (heartbeat timeout %s)",
			attempt, attempt+1, time.Since(killed).Round(10*time.Millisecond), heartbeat)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res), "the visit outlived %d lost workers", kills)

	scheduled := 0
	iter := c.GetWorkflowHistory(ctx, id, "", false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "Visit" {
			scheduled++
		}
	}
	require.Equal(t, 1, scheduled, "the server retried the visit; the workflow never had to")
	h := &harness{t: t, srv: srv, c: c}
	h.recordHistory("lost-worker-retry", id)
}

// waitAttempt waits until attempt of the run's visit has started on a
// worker.
func waitAttempt(t *testing.T, c client.Client, id string, attempt int32) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		d, err := c.DescribeWorkflow(context.Background(), id, "")
		if err == nil {
			for _, p := range d.RawResponse.GetPendingActivities() {
				if p.GetAttempt() == attempt && p.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s: attempt %d of its visit never started", id, attempt)
}

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	"github.com/tether-run/tether/internal/graph"
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

// processRig is what a test of worker processes starts from: the worker
// binary, a dev server and its client, and the environment of a worker on
// a file store in a fresh directory, with extra added.
func processRig(t *testing.T, extra ...string) (bin string, srv *testenv.Server, c client.Client, env []string) {
	t.Helper()
	bin = buildWorker(t)
	srv = testenv.DevServer(t)
	c = srv.Client(t)
	env = append([]string{"TEMPORAL_ADDRESS=" + srv.Address, "TETHER_BLOB_URL=file://" + t.TempDir()}, extra...)
	return bin, srv, c, env
}

// buildWorker returns the tether-worker binary with its confine helper
// and its ask_user server beside it, as `make build` and the image have
// them.
func buildWorker(t *testing.T) string {
	t.Helper()
	bin, err := workerBin()
	require.NoError(t, err)
	var copyErr error
	confineBeside.Do(func() {
		for name, src := range map[string]string{"tether-confine": sandboxtest.Helper(t), "tether-ask-user": clitest.AskUserCommand(t)[0]} {
			b, err := os.ReadFile(src)
			if err == nil {
				err = os.WriteFile(filepath.Join(filepath.Dir(bin), name), b, 0o755)
			}
			if err != nil {
				copyErr = err
				return
			}
		}
	})
	require.NoError(t, copyErr)
	require.FileExists(t, filepath.Join(filepath.Dir(bin), "tether-confine"), "the confine helper beside the worker")
	require.FileExists(t, filepath.Join(filepath.Dir(bin), "tether-ask-user"), "the ask_user server beside the worker")
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
	bin, srv, c, env := processRig(t)
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

// stallingProxy stands between the workers and the S3 server. Armed, it
// holds the next upload of a session blob half-sent until its client goes
// away, and says so on stalled.
type stallingProxy struct {
	*httptest.Server
	armed   atomic.Bool
	stalled chan string
	release chan struct{}
}

func newStallingProxy(t *testing.T, endpoint string) *stallingProxy {
	u, err := url.Parse(endpoint)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &stallingProxy{stalled: make(chan string, 1), release: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/sessions/") && p.armed.CompareAndSwap(true, false) {
			_, _ = io.CopyN(io.Discard, r.Body, 64)
			p.stalled <- r.URL.Path
			// No answer until the test has killed the client: the upload
			// never completes.
			<-p.release
			http.Error(w, "upload cut short", http.StatusBadGateway)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		p.releaseOnce()
		p.Close()
	})
	return p
}

func (p *stallingProxy) releaseOnce() {
	select {
	case <-p.release:
	default:
		close(p.release)
	}
}

// TestWorkerKilledMidUploadOfAPart kills the worker process with SIGKILL
// while it uploads an incremental pack of a persist slot (the S3 upload
// held half-sent by a proxy). The server starts the visit again on a new
// worker with empty disks, which restores the slot (a base and a part)
// from the store and adds its own part; a third worker, empty too,
// restores that slot of a base and two parts, and the conversation counts
// every turn.
func TestWorkerKilledMidUploadOfAPart(t *testing.T) {
	bin := buildWorker(t)
	srv := testenv.DevServer(t)
	c := srv.Client(t)
	s3 := testenv.VersityGW(t)
	proxy := newStallingProxy(t, s3.Endpoint)
	storeURL := strings.Replace(s3.URL("e2e"), url.QueryEscape(s3.Endpoint), url.QueryEscape(proxy.URL), 1)
	env := []string{
		"TEMPORAL_ADDRESS=" + srv.Address,
		"TETHER_BLOB_URL=" + storeURL,
		"AWS_ACCESS_KEY_ID=" + s3.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s3.SecretKey,
	}
	// The first visit's prompt carries 12 KB that do not compress, so the
	// slot's base outweighs the parts of the visits after it.
	pad := make([]byte, 9<<10)
	_, err := rand.Read(pad)
	require.NoError(t, err)
	g := testGraph(t, "part-kill")
	id := "killed-mid-part"
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g,
			Inputs:  map[string]any{"pad": base64.StdEncoding.EncodeToString(pad)},
			Options: runapi.Options{HeartbeatTimeout: 3 * time.Second}})
	require.NoError(t, err)
	h := &harness{t: t, srv: srv, c: c}
	blobs, err := blob.Open(context.Background(), s3.URL("e2e"), blob.WithCredentials(s3.Credentials()))
	require.NoError(t, err)
	runs := runstore.New(blobs)
	slot := func() runstore.NodeSessionSlot {
		cp, err := runs.Latest(context.Background(), id)
		require.NoError(t, err)
		return cp.NodeSessions["writer"]
	}

	a := startWorkerProcess(t, bin, env)
	h.answer(id, h.waitQuestion(id).ID, "again")
	q := h.waitQuestion(id)
	require.Equal(t, "judge-2", q.ID)
	require.Len(t, slot().Parts, 1, "visit 2 added a part to visit 1's base")

	// Visit 3 runs on a, which dies while its part is half uploaded.
	proxy.armed.Store(true)
	h.answer(id, q.ID, "again")
	select {
	case key := <-proxy.stalled:
		t.Logf("upload of %s held; killing the worker", key)
	case <-time.After(2 * time.Minute):
		t.Fatal("visit 3 never uploaded its session")
	}
	require.NoError(t, a.cmd.Process.Kill())
	_, _ = a.cmd.Process.Wait()
	proxy.releaseOnce()

	b := startWorkerProcess(t, bin, env)
	q = h.waitQuestion(id)
	require.Equal(t, "judge-3", q.ID, "visit 3 finished on the second worker")
	s3slot := slot()
	require.Len(t, s3slot.Parts, 2, "the second worker restored the base and its part, and added one")

	// A third worker with empty disks restores the slot of a base and two
	// parts.
	require.NoError(t, b.cmd.Process.Kill())
	_, _ = b.cmd.Process.Wait()
	startWorkerProcess(t, bin, env)
	h.answer(id, q.ID, "again")
	q = h.waitQuestion(id)
	require.Equal(t, "judge-4", q.ID)
	h.answer(id, q.ID, "done")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))

	cp, err := runs.Latest(context.Background(), id)
	require.NoError(t, err)
	text, _ := cp.Outputs["writer"]["text"].(string)
	require.Contains(t, text, "turn 4: draft 4", "the conversation went on from every turn before")
	final := cp.NodeSessions["writer"]
	require.Equal(t, s3slot.StateRef, final.StateRef)
	require.Len(t, final.Parts, 3)

	// Every session blob left is one a checkpoint names: the killed
	// attempt's upload never landed, or went with the sweep.
	named := cp.Refs()
	left, err := blobs.List(context.Background(), runstore.RunPrefix(id)+"sessions/")
	require.NoError(t, err)
	require.Len(t, left, 4, "a base and three parts")
	for _, o := range left {
		assert.Contains(t, named, o.Key, "session blob %s is named by no checkpoint", o.Key)
	}
}

// TestWorkerKilledWhileThreeBranchesRun kills the worker process (SIGKILL)
// while the three branches of a fan-out are each inside Claude Code,
// resuming the conversation that asked the user a question, after the
// answer made each write a second file. A new worker with empty disks
// takes the three visits over: each restores its branch's files and its
// paused conversation from the store, and the join merges all six files.
func TestWorkerKilledWhileThreeBranchesRun(t *testing.T) {
	k := newKillRig(t, branchKillModel)
	bin, srv, c, fake, store, env := k.bin, k.srv, k.c, k.fake, k.store, k.env
	a := startWorkerProcess(t, bin, env)

	var nodes, edges []string
	for _, b := range []string{"a", "b", "c"} {
		nodes = append(nodes,
			fmt.Sprintf(`  - {id: %[1]s_prep, kind: tool, run: [sh, -c, 'echo from %[1]s > %[1]s.txt']}`, b),
			fmt.Sprintf(`  - {id: %[1]s, kind: agent, backend: claude_code, permissions: edit, prompt: "branch %[1]s\nASK_USER: go on with %[1]s?"}`, b),
			fmt.Sprintf(`  - {id: %[1]s_check, kind: tool, run: [sh, -c, 'cat %[1]s.txt %[1]s2.txt']}`, b))
		edges = append(edges,
			fmt.Sprintf(`  - {from: plan, to: %s_prep}`, b),
			fmt.Sprintf(`  - {from: %[1]s_prep, to: %[1]s}`, b),
			fmt.Sprintf(`  - {from: %[1]s, to: %[1]s_check}`, b),
			fmt.Sprintf(`  - {from: %s_check, to: gather}`, b))
	}
	g := parseGraph(t, fmt.Sprintf(graphYAML(t, "branch-kill"), strings.Join(nodes, "\n"), strings.Join(edges, "\n")), "branch-kill.yaml")
	const id = "branch-kill"
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Options: runapi.Options{HeartbeatTimeout: 5 * time.Second, WorkerLostAfter: 10 * time.Second}})
	require.NoError(t, err)

	// The three branches ask; the checkpoint records each one's files.
	h := &harness{t: t, srv: srv, c: c}
	var asked []runapi.PendingQuestion
	deadline := time.Now().Add(3 * time.Minute)
	for len(asked) < 3 {
		require.True(t, time.Now().Before(deadline), "the three branches did not all ask: %v", asked)
		st, err := h.query(id, 30*time.Second)
		require.NoError(t, err)
		asked = st.Questions
		time.Sleep(200 * time.Millisecond)
	}
	blobs, err := blob.Open(context.Background(), "file://"+store)
	require.NoError(t, err)
	runs := runstore.New(blobs)
	cp, err := runs.Latest(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, cp.Branches, 3, "the checkpoint records the open branches")
	for _, b := range cp.Branches {
		require.NotNil(t, b.Workspace)
		assert.NotEqual(t, b.Base, b.Workspace.Commit, "branch %s's head holds its first file", b.Name)
		assert.Equal(t, strings.TrimSuffix(b.Name, "_prep"), b.Next.Node, "branch %s stands at its agent", b.Name)
	}

	// The answers make each conversation write a second file, then think
	// for a while: the worker is killed then, with three visits inside
	// the CLI.
	for _, q := range asked {
		b := strings.SplitN(q.ID, "-", 2)[0]
		h.answer(id, q.ID, fmt.Sprintf("go on\nWRITE_FILE: %[1]s2.txt\nanswered %[1]s\nEND_FILE\nSLEEP_AFTER_TOOL: 20s", b))
	}
	deadline = time.Now().Add(2 * time.Minute)
	for !allSlept(fake) {
		require.True(t, time.Now().Before(deadline), "the three answered visits never reached the model's pause")
		time.Sleep(100 * time.Millisecond)
	}
	require.GreaterOrEqual(t, len(clitest.Processes(branchKillModel)), 3, "three CLIs run at once")
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = a.cmd.Process.Wait()
	startWorkerProcess(t, bin, env)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, "base\nfrom a\nanswered a\nfrom b\nanswered b\nfrom c\nanswered c\n", fmt.Sprint(res.Output["files"]),
		"every branch's files came back on the new worker and were merged")
	cp, err = runs.Latest(context.Background(), id)
	require.NoError(t, err)
	for _, b := range []string{"a", "b", "c"} {
		assert.Equal(t, "from "+b+"\nanswered "+b+"\n", cp.Outputs[b+"_check"]["stdout"])
		text, _ := cp.Outputs[b]["text"].(string)
		assert.Contains(t, text, "turn 2", "branch %s's answer continued its conversation: %s", b, text)
		assert.Contains(t, text, "branch "+b, "the conversation holds the branch's first prompt: %s", text)
	}
	assert.Len(t, cp.Joined, 3)
	assert.Nil(t, cp.Branches)
	// Each answered visit began twice, on the killed worker and on the new
	// one, each time as turn 2 of the conversation that asked.
	for _, b := range []string{"a", "b", "c"} {
		starts := 0
		for _, r := range fake.Requests() {
			if !r.AfterToolResult && len(r.Prompts) == 2 && strings.Contains(r.Prompts[0], "branch "+b) && strings.Contains(r.Prompts[1], b+"2.txt") {
				starts++
			}
		}
		assert.Equal(t, 2, starts, "branch %s's answered visit ran on both workers", b)
	}
}

// branchKillModel names the model of this test's CLI runs.
const branchKillModel = "claude-branch-kill-1"

// allSlept reports whether the model was asked, by each of the three
// branches' conversations, for the reply after its second file was
// written: the reply it delays.
func allSlept(f *fakemodel.Server) bool {
	var seen []string
	for _, r := range f.Requests() {
		if !r.AfterToolResult || len(r.Prompts) < 2 {
			continue
		}
		for _, b := range []string{"a", "b", "c"} {
			if strings.Contains(r.Prompts[0], "branch "+b) && strings.Contains(r.Prompts[len(r.Prompts)-1], b+"2.txt") && !slices.Contains(seen, b) {
				seen = append(seen, b)
			}
		}
	}
	return len(seen) == 3
}

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

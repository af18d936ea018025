package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/notify"
	"github.com/tether-run/tether/internal/notify/notifytest"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/testenv"
)

var notifySecret = []byte("e2e-notify-secret-0123456789")

// closedURL is a loopback URL nobody listens on, for the whole test: its
// port is bound by a socket that never listens, so every connection is
// refused and no other listener of this process or another one can be
// given the port while the test runs (a port merely closed again can be,
// and whatever answers there then, a 404 or a gRPC server, is not the
// receiver that is down this test means).
func closedURL(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	return fmt.Sprintf("http://127.0.0.1:%d/hook", sa.(*syscall.SockaddrInet4).Port)
}

func startReceiver(t *testing.T) *notifytest.Receiver {
	t.Helper()
	r, err := notifytest.Start(notifySecret)
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r
}

// waitNotices waits until the receiver holds n notices (distinct keys).
func waitNotices(t *testing.T, r *notifytest.Receiver, n int, within time.Duration) map[string][]notifytest.Delivery {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := r.Notices()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %d notices, want %d: %v", len(got), n, keysOf(got))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func keysOf(m map[string][]notifytest.Delivery) []string {
	var out []string
	for k, ds := range m {
		out = append(out, fmt.Sprintf("%s:%s×%d", ds[0].Event, k, len(ds)))
	}
	sort.Strings(out)
	return out
}

// checkNotices asserts what a receiver should be able to rely on: every
// request signed, every resend of a notice the same body, and per
// question exactly one notice. It returns the notices by question id
// ("" for the run's end) and the number of resends.
func checkNotices(t *testing.T, r *notifytest.Receiver) (map[string][]string, int) {
	t.Helper()
	byQuestion := map[string][]string{}
	resent := 0
	for key, ds := range r.Notices() {
		for _, d := range ds {
			require.NoError(t, d.SignatureErr, "notice %s is signed with the secret", key)
			assert.Equal(t, key, d.Notice.ID, "the idempotency key is in the header and the body")
			assert.True(t, bytes.Equal(ds[0].Body, d.Body), "notice %s sent again is the same body", key)
		}
		resent += len(ds) - 1
		q := ""
		if ds[0].Notice.Question != nil {
			q = ds[0].Notice.Question.ID
		}
		byQuestion[q] = append(byQuestion[q], ds[0].Event)
	}
	return byQuestion, resent
}

// TestNoticeOncePerQuestionThroughKills: two questions, and each time the
// worker sending a question's notice is killed while the receiver holds
// the request unanswered. The notice's next attempt, on a new worker,
// sends it again with the same key and the same body, so the receiver,
// keeping the keys it saw, has exactly one notice per question, and one
// for the run's end; every request's signature checks.
func TestNoticeOncePerQuestionThroughKills(t *testing.T) {
	bin := buildWorker(t)
	srv := testenv.DevServer(t)
	c := srv.Client(t)
	rcv := startReceiver(t)
	env := []string{
		"TEMPORAL_ADDRESS=" + srv.Address, "TETHER_BLOB_URL=file://" + t.TempDir(),
		"TETHER_NOTIFY=ops=" + rcv.URL(), "TETHER_NOTIFY_SECRET=" + string(notifySecret),
		"TETHER_CONSOLE_URL=https://tether.example.com", "TETHER_LINK_KEY=" + hex.EncodeToString(bytes.Repeat([]byte{5}, 32)),
	}
	// The first request of each question's notice is held until its
	// worker is gone.
	var mu sync.Mutex
	seen := map[string]bool{}
	rcv.Hold(func(d notifytest.Delivery) bool {
		mu.Lock()
		defer mu.Unlock()
		if d.Event != graph.NotifyWaiting || seen[d.Key] {
			return false
		}
		seen[d.Key] = true
		return true
	})
	w := startWorkerProcess(t, bin, env)
	g := testGraph(t, "ask-twice")
	id := "notice-kills"
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Options: runapi.Options{HeartbeatTimeout: 2 * time.Second}})
	require.NoError(t, err)
	h := &harness{t: t, srv: srv, c: c}
	for _, qid := range []string{"first-1", "second-1"} {
		d := awaitDelivery(t, rcv, func(d notifytest.Delivery) bool {
			return d.Notice.Question != nil && d.Notice.Question.ID == qid
		})
		require.NoError(t, w.cmd.Process.Kill(), "the worker dies while the receiver holds %s's notice", qid)
		_, _ = w.cmd.Process.Wait()
		w = startWorkerProcess(t, bin, env)
		// Sent again by the next attempt, with the same key.
		deadline := time.Now().Add(2 * time.Minute)
		for len(rcv.Notices()[d.Key]) < 2 {
			require.True(t, time.Now().Before(deadline), "%s's notice was never sent again", qid)
			time.Sleep(50 * time.Millisecond)
		}
		q := h.waitQuestion(id)
		require.Equal(t, qid, q.ID)
		h.answer(id, qid, "yes")
	}
	rcv.Release()
	var res runapi.GraphRunResult
	ctx, cancel := context.WithTimeout(context.Background(), runWait)
	defer cancel()
	require.NoError(t, run.Get(ctx, &res))
	waitNotices(t, rcv, 3, 2*time.Minute)

	byQuestion, resent := checkNotices(t, rcv)
	assert.Equal(t, map[string][]string{"first-1": {"waiting"}, "second-1": {"waiting"}, "": {"completed"}}, byQuestion, "one notice per question and one for the end")
	assert.GreaterOrEqual(t, resent, 2, "each question's notice was sent again after its worker died")
	var first notify.JSONNotice
	for _, ds := range rcv.Notices() {
		if q := ds[0].Notice.Question; q != nil && q.ID == "first-1" {
			first = ds[0].Notice
		}
	}
	require.Len(t, first.Question.AnswerLinks, 2, "an answer link per option")
	assert.Equal(t, "https://tether.example.com/runs/"+id, first.ConsoleURL)
	t.Logf("notices by question: %v; %d sent again after a kill", byQuestion, resent)
}

// awaitDelivery waits for a request that ok accepts, among those that
// arrived so far or arrive within two minutes.
func awaitDelivery(t *testing.T, r *notifytest.Receiver, ok func(notifytest.Delivery) bool) notifytest.Delivery {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		for _, d := range r.Deliveries() {
			if ok(d) {
				return d
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the receiver never got the request awaited")
	return notifytest.Delivery{}
}

// TestNoticesNeverHoldTheRun: one receiver is down for 30 s, another for
// good. The run asks its questions and completes without waiting for
// either; the first receiver gets every notice once it is back, and the
// second's notices are still being tried, each in a workflow of its own,
// after the run ended.
func TestNoticesNeverHoldTheRun(t *testing.T) {
	late := startReceiver(t)
	dead := closedURL(t)
	h := newHarness(t, "")
	sender, err := notify.NewSender([]notify.Endpoint{{Name: "late", URL: late.URL()}, {Name: "dead", URL: dead}}, notifySecret, "", nil, 0)
	require.NoError(t, err)
	h.notify = sender
	h.startWorker()
	late.Down()
	down := time.Now()

	g := testGraph(t, "ask-twice")
	id := "notice-down"
	run := h.start(id, g, nil)
	for _, qid := range []string{"first-1", "second-1"} {
		q := h.waitQuestion(id)
		require.Equal(t, qid, q.ID)
		h.answer(id, qid, "yes")
	}
	res, err := h.result(run)
	require.NoError(t, err)
	require.Equal(t, "completed", res.Status)
	ran := time.Since(down)
	assert.Less(t, ran, 30*time.Second, "the run completed while its receivers were down")
	assert.Empty(t, late.Deliveries())

	time.Sleep(30*time.Second - time.Since(down))
	require.NoError(t, late.Up())
	back := time.Now()
	waitNotices(t, late, 3, 3*time.Minute)
	t.Logf("run done %s after the receiver went down; its 3 notices arrived within %s of it coming back", ran.Round(time.Second), time.Since(back).Round(time.Second))
	byQuestion, _ := checkNotices(t, late)
	assert.Equal(t, map[string][]string{"first-1": {"waiting"}, "second-1": {"waiting"}, "": {"completed"}}, byQuestion)

	// The dead receiver's notices are still being tried, on their own;
	// the late one's are done.
	resp, err := h.c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowType = %q", runapi.NoticeWorkflowType),
	})
	require.NoError(t, err)
	count := map[enumspb.WorkflowExecutionStatus]int{}
	for _, e := range resp.GetExecutions() {
		wid := e.GetExecution().GetWorkflowId()
		require.True(t, strings.HasPrefix(wid, id+"/notice/"), wid)
		d, err := h.c.DescribeWorkflow(context.Background(), wid, "")
		require.NoError(t, err)
		st := d.RawResponse.GetWorkflowExecutionInfo().GetStatus()
		count[st]++
		if strings.HasSuffix(wid, "/dead") {
			if !assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st, wid) {
				t.Logf("%s ended: %v", wid, h.c.GetWorkflow(context.Background(), wid, "").Get(context.Background(), nil))
			}
			_ = h.c.TerminateWorkflow(context.Background(), wid, "", "test over")
		} else {
			assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, st, wid)
			if strings.Contains(wid, "/notice/waiting/first-1/") {
				h.recordHistory("notice-workflow", wid)
			}
		}
	}
	assert.Equal(t, 3, count[enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING], "%v", count)
	assert.Equal(t, 3, count[enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED], "%v", count)
	h.recordHistory("notices", id)
}

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/testenv"
)

// Item 9: an empty answer is refused, by `tether answer` and by the
// answer update a plain client sends, unless the question allows one;
// the refusal reads as one sentence, without Temporal's type trailer.
func TestEmptyAnswersAreRefused(t *testing.T) {
	h, dir := cliHarness(t)
	file := graphFile(t, "two")
	h.tether(t, dir, "run", file, "--id", "a3")
	q := h.waitQuestion("a3")
	for _, args := range [][]string{{"answer", "a3", q.ID, ""}, {"answer", "a3", q.ID, "  ", "--signal"}} {
		code, out := tetherCode(t, args...)
		assert.Equal(t, cli.ExitUsage, code, out)
		assert.Contains(t, out, "the answer to approve-1 is empty; the question needs one")
	}
	// The update itself refuses it too, for any client.
	ctx := context.Background()
	u, err := h.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "a3", UpdateName: runapi.UpdateAnswer,
		Args: []any{runapi.Answer{QuestionID: q.ID, Text: ""}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = u.Get(ctx, nil)
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), `empty answer: "approve-1" needs a non-empty answer`)
	assert.Equal(t, q.ID, h.waitQuestion("a3").ID, "the run still waits")

	code, out := tetherCode(t, "answer", "a3", "nope-1", "yes")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `answer refused by run a3: no pending question with this id: "nope-1" (pending: approve-1)`)
	assert.NotContains(t, out, "(type:", "no Temporal type trailer")

	h.tether(t, dir, "answer", "a3", q.ID, "yes")
	q = h.waitQuestion("a3")
	assert.Equal(t, "note-1", q.ID)
	h.tether(t, dir, "answer", "a3", q.ID, "", "--signal")
	res, err := h.result(h.c.GetWorkflow(ctx, "a3", ""))
	require.NoError(t, err, "a question that allows it takes an empty answer")
	assert.Equal(t, "", res.Output["approved"])
}

// Item 10: with no worker, `tether run --follow` and `tether answer` say
// within 5 seconds that none is polling the task queue (the answer too
// when the worker stopped only a moment ago, which Temporal lists as
// polling for a minute), keep waiting, and say so again when one appears.
func TestNoWorkerIsSaidAndSoIsItsReturn(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	h.useCLI(t)
	file := graphFile(t, "ask")

	var follow testenv.SyncBuffer
	done := make(chan int, 1)
	go func() { done <- cli.Main([]string{"run", file, "--id", "nw-1", "--follow"}, &follow, &follow) }()
	waitFor(t, &follow, `! no worker has polled task queue "tether" in the last 5 min: start tether-worker`, 5*time.Second)
	assert.Contains(t, follow.String(), "the run waits until one starts")
	h.startWorker()
	waitFor(t, &follow, `! a worker polls task queue "tether" again`, time.Minute)
	q := h.waitQuestion("nw-1")

	// The worker goes, and an answer says at once that none takes it:
	// Temporal still lists the worker, but it answers no query.
	h.stopWorker()
	var answer testenv.SyncBuffer
	answered := make(chan int, 1)
	go func() { answered <- cli.Main([]string{"answer", "nw-1", q.ID, "yes"}, &answer, &answer) }()
	waitFor(t, &answer, `! no worker answered run nw-1`, 5*time.Second)
	assert.Contains(t, answer.String(), "start tether-worker; the answer waits until one starts")
	h.startWorker()
	select {
	case code := <-answered:
		assert.Equal(t, cli.ExitOK, code, answer.String())
	case <-time.After(runWait):
		t.Fatalf("the answer did not land: %s", answer.String())
	}
	assert.Contains(t, answer.String(), "answer to ask-1 accepted by run nw-1")
	select {
	case code := <-done:
		assert.Equal(t, cli.ExitOK, code, follow.String())
	case <-time.After(runWait):
		t.Fatalf("the run did not end: %s", follow.String())
	}
}

func waitFor(t *testing.T, b *testenv.SyncBuffer, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %s:\n%s", want, within, b.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Item 11: the small things. status tells apart a run whose Temporal is
// unreachable, one open with no worker, and one closed without a
// checkpoint; Ctrl-C on --follow says the run goes on and how to follow
// it again; a missing tool program gets advice about tools; the README's
// command for a waiting run's question shows it.
func TestSmallThings(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	h.useCLI(t)
	ask, err := graph.ParseFile(graphFile(t, "ask"))
	require.NoError(t, err)

	// Open, no worker, no checkpoint yet.
	h.start("open-1", ask, nil)
	code, out := tetherCode(t, "status", "open-1")
	assert.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, `source:     Temporal only: the run is open, but no worker has polled task queue "tether" in the last 5 min: start tether-worker; the run has written no checkpoint yet`)

	// Closed without a checkpoint: a graph the workflow refuses at once.
	h.startWorker()
	bad := *ask
	bad.Start = "nowhere"
	_, err = h.result(h.start("closed-1", &bad, nil))
	require.Error(t, err)
	code, out = tetherCode(t, "status", "closed-1")
	assert.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "status:     failed")
	assert.Contains(t, out, `start node "nowhere" does not exist`)
	assert.Contains(t, out, "the run is closed (failed) and never wrote a checkpoint")

	// Temporal unreachable.
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	code, out = tetherCode(t, "status", "ghost")
	assert.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, "cannot show run \"ghost\": Temporal is unreachable")
	t.Setenv("TEMPORAL_ADDRESS", h.srv.Address)

	// Ctrl-C on --follow.
	var follow testenv.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main([]string{"run", graphFile(t, "ask"), "--id", "cc-1", "--follow"}, &follow, &follow)
	}()
	waitFor(t, &follow, "? ask asks [ask-1]", time.Minute)
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGINT))
	select {
	case code := <-done:
		assert.Equal(t, cli.ExitDetached, code)
	case <-time.After(time.Minute):
		t.Fatal("--follow did not stop on Ctrl-C")
	}
	assert.Contains(t, follow.String(), "detached from run cc-1; it goes on without you. Follow it again with `tether status cc-1 --follow`")
	out = h.tether(t, dir, "status", "cc-1")
	assert.Contains(t, out, "status:     waiting", "the run went on")

	// The README: a waiting run's question is in `temporal workflow metadata`.
	meta, err := exec.Command(testenv.Tool(t, "temporal"), "workflow", "metadata", "--address", h.srv.Address, "--workflow-id", "cc-1").CombinedOutput()
	require.NoError(t, err, "%s", meta)
	assert.Contains(t, string(meta), "tether answer cc-1 ask-1 TEXT")

	// A tool whose program is missing: advice about tools, not agent CLIs.
	missing := graphFile(t, "missing")
	code, out = tetherCode(t, "run", missing, "--id", "mt-1", "--follow")
	assert.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, `cannot run "no-such-program-tether"`)
	assert.Contains(t, out, "install it on every worker (or name it by absolute path in the node's run)")
	assert.NotContains(t, out, "tools.sh clis")
	assert.NotContains(t, out, "(type:")
}

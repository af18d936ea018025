package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
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

// TestCommandsSayWhatHappened: each command item of the review, on real
// runs. `status --follow` exits 1 for a failed run whether it saw it end
// or it had ended; `status --json` never says "ok" beside an outcome that
// is not; `tether logs` shows a human visit's question and answer, the
// guidance an agent got, a visit once after a rewind, and never claims
// Temporal has no history when it has; a closed run's question offers no
// answer line; `guide` refuses a node the run cannot visit again;
// `delete`, `cancel`, `logs` and `status` refuse an unknown run with
// exit 2, as `answer` does a closed run; an error names a node once.
func TestCommandsSayWhatHappened(t *testing.T) {
	h, dir := cliHarness(t)

	// status --follow: a failed run is a failure however it is followed.
	failing := graphFile(t, "deploy")
	h.tether(t, dir, "run", failing, "--id", "fail-1")
	code, out := tetherCode(t, "status", "fail-1", "--follow")
	assert.Equal(t, cli.ExitFailed, code, "following it to its end: %s", out)
	code, out = tetherCode(t, "status", "fail-1", "--follow")
	assert.Equal(t, cli.ExitFailed, code, "it had ended: %s", out)
	assert.Contains(t, out, "run fail-1 ended failed")
	code, out = tetherCode(t, "status", "fail-1")
	assert.Equal(t, cli.ExitOK, code, "without --follow, status shows: %s", out)

	// status --json: a tool that timed out is not "ok".
	slowTool := graphFile(t, "timeout")
	h.tether(t, dir, "run", slowTool, "--id", "to-1", "--follow")
	out = h.tether(t, dir, "status", "to-1", "--json")
	var st runapi.State
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.NotEmpty(t, st.Path)
	assert.Equal(t, "t", st.Path[0].Node)
	assert.Equal(t, "timed_out", st.Path[0].Outcome)
	assert.Equal(t, "timed_out", st.Path[0].Status, "status and outcome agree")

	// logs: a human visit, guidance, one visit after a rewind.
	guided := graphFile(t, "guided")
	h.tether(t, dir, "run", guided, "--id", "g-1")
	q := h.waitQuestion("g-1")
	out = h.tether(t, dir, "guide", "g-1", "writer", "use a wide brush")
	assert.Contains(t, out, "note sent to node writer")
	h.answer("g-1", q.ID, "blue")
	require.Equal(t, "last-1", h.waitQuestion("g-1").ID)
	code, out = tetherCode(t, "guide", "g-1", "writer", "again")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "node writer cannot be visited again from where the run is (last)")
	logs := h.tether(t, dir, "logs", "g-1")
	t.Logf("tether logs g-1:\n%s", logs)
	assert.Contains(t, logs, "== ask visit 1 · human ==\n-- question ask-1 --\nWhich colour?")
	assert.Regexp(t, `-- answer \(by [^,]+, \S+, update\) --\nblue`, logs)
	assert.Contains(t, logs, "-- guidance it got after its prompt --\nuse a wide brush")
	logs = h.tether(t, dir, "logs", "g-1", "ask")
	assert.NotContains(t, logs, "Temporal has no history", "Temporal has it")
	assert.Contains(t, logs, "== ask visit 1 · human ==")
	code, out = tetherCode(t, "logs", "g-1", "nobody")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "run g-1 has no visit nobody in Temporal's history; its visits: ask 1, writer 1")
	assert.NotContains(t, out, "no history of run")

	h.answer("g-1", "last-1", "yes")
	_, err := h.result(h.c.GetWorkflow(context.Background(), "g-1", ""))
	require.NoError(t, err)
	h.tether(t, dir, "rewind", "g-1", "--to", "1")
	h.answer("g-1", h.waitQuestion("g-1").ID, "green")
	require.Equal(t, "last-1", h.waitQuestion("g-1").ID)
	logs = h.tether(t, dir, "logs", "g-1", "writer")
	assert.Equal(t, 1, strings.Count(logs, "== writer visit 1"), "a rewound visit shows once, as the run ran it last: %s", logs)
	assert.Contains(t, logs, "paint it green")
	assert.NotContains(t, logs, "paint it blue")

	// A closed run's question: no answer line; an answer to it is refused.
	h.tether(t, dir, "cancel", "g-1")
	out = h.tether(t, dir, "status", "g-1")
	assert.NotContains(t, out, "answer with:", out)
	assert.Contains(t, out, "(unanswered when the run ended)")
	code, out = tetherCode(t, "answer", "g-1", "last-1", "yes")
	assert.Equal(t, cli.ExitUsage, code, "a refused answer is a usage error: %s", out)
	assert.Contains(t, out, "answer refused: run g-1 is not open")

	// An unknown run is refused, not reported done.
	for _, args := range [][]string{{"delete", "nosuch"}, {"cancel", "nosuch"}, {"logs", "nosuch"}, {"status", "nosuch"}} {
		code, out := tetherCode(t, args...)
		assert.Equal(t, cli.ExitUsage, code, "%v: %s", args, out)
		assert.NotContains(t, out, "deleted", "%v", args)
		assert.Regexp(t, `(?i)no run "nosuch"|run "?nosuch"? (is )?not (found|known)`, out, "%v", args)
	}

	// An error names its node once, without the template engine's words.
	bad := graphFile(t, "bad")
	code, out = tetherCode(t, "run", bad, "--id", "bad-1", "--follow")
	assert.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, `tool node "t" (visit 1): argument 1 of its run: line 1, column`)
	assert.Contains(t, out, `map has no entry for key "nope"`)
	assert.Equal(t, 1, len(regexp.MustCompile(`node "t"`).FindAllString(out[strings.Index(out, "run bad-1 failed"):], -1)), "the node is named once: %s", out)
	for _, stutter := range []string{"graph: prompt", "template: prompt", `executing "prompt"`} {
		assert.NotContains(t, out, stutter)
	}
}

// Item 7: type and template mistakes are caught by validation, and what
// only shows at run time says node, edge, expression and the values seen.
func TestTypeAndTemplateMistakes(t *testing.T) {
	h, dir := cliHarness(t)

	// A number compared with a string: an error, never a silent false.
	mismatch := graphFile(t, "mismatch")
	code, out := tetherCode(t, "validate", mismatch)
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Regexp(t, `mismatch\.yaml:9:\d+: G057 error: the when of edge check -> passed does not fit the output of tool node check: invalid operation: == \(mismatched types int and string\)`, out)
	code, out = tetherCode(t, "run", mismatch)
	assert.Equal(t, cli.ExitUsage, code, "refused before it starts: %s", out)

	// A template reading an input its first visit is not given: a warning
	// with the way in, and at run time a failure that names the keys.
	feedback := graphFile(t, "feedback")
	code, out = tetherCode(t, "validate", feedback)
	assert.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "G058 warning: node writer reads .input.feedback, but the run's start (path: start → writer; inputs it always has: topic) does not deliver it")
	code, out = tetherCode(t, "run", feedback, "--id", "fb-1", "--input", "topic=otters", "--follow")
	assert.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, "G058 warning", "run prints the warning before it starts")
	assert.Regexp(t, `node "writer".*map has no entry for key "feedback".*the input it was given has keys topic`, out)

	// A when that fails on what a scripted agent's script writes is
	// caught before the run starts.
	scripted := graphFile(t, "approved-scripted")
	code, out = tetherCode(t, "run", scripted, "--id", "ap-0")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `G069 error: the when of edge judge -> done fails on reply 1 of judge's script ({"approved": "yes"}): when "output.approved" gave yes (string), not a boolean`)
	assert.Equal(t, 0, h.executions("ap-0"), "nothing started")

	// A when that is not a boolean at run time (a reply validation cannot
	// foresee) names node, edge, expression and the values it saw.
	approved := graphFile(t, "approved")
	code, out = tetherCode(t, "run", approved, "--id", "ap-1", "--follow")
	assert.Equal(t, cli.ExitFailed, code, out)
	st := h.tether(t, dir, "status", "ap-1")
	t.Logf("run:\n%s\nstatus:\n%s", out, st)
	assert.Regexp(t, `error: +node judge, edge judge -> done: when "output.approved" gave nil, not a boolean.*the values it saw: output \{.*verdict="yes, turn 1".*\}, input \{\}, visits 1`, st)
}

// Item 8: inputs are checked before a run starts, and are strings unless
// the graph declares a type.
func TestInputsAreCheckedBeforeTheRunStarts(t *testing.T) {
	h, dir := cliHarness(t)
	file := graphFile(t, "inputs")
	h.tether(t, dir, "validate", file)

	code, out := tetherCode(t, "run", file, "--id", "in-1")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "graph inputs needs input(s) topic; pass them with --input NAME=VALUE")
	assert.Equal(t, 0, h.executions("in-1"), "nothing started")

	code, out = tetherCode(t, "run", file, "--id", "in-1", "--input", "topic=x", "--input", "topci=y")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `graph inputs has no input topci; did you mean "topic"? its inputs are topic, version, rounds`)
	code, out = tetherCode(t, "run", file, "--id", "in-1", "--input", "topic=x", "--input", "rounds=many")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `input rounds is a number, and "many" is not one`)
	assert.Equal(t, 0, h.executions("in-1"), "nothing started")

	out = h.tether(t, dir, "run", file, "--id", "in-1", "--input", "topic=1.10", "--input", "version=1.10", "--input", "rounds=3", "--follow")
	assert.Contains(t, out, "run in-1 completed")
	cp, err := h.runs.Latest(context.Background(), "in-1")
	require.NoError(t, err)
	assert.Equal(t, "1.10", cp.Inputs["topic"], "a string stays as typed")
	assert.Equal(t, "1.10", cp.Inputs["version"])
	assert.Equal(t, 3.0, cp.Inputs["rounds"])
	assert.Equal(t, "1.10 1.10 3\n", cp.Outputs["done"]["said"])
}

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

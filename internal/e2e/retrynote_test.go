package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// retryNoteModel names the model of the retry-note test's CLI runs.
const retryNoteModel = "claude-retry-note-test-1"

// TestInterruptedVisitKnowsWhatHappened: a Claude Code visit runs a shell
// command (its first tool call), and while the model is still thinking
// after it, its worker is killed (SIGKILL) or stopped (SIGTERM, 1 s grace).
// The next attempt, on another worker, restores the conversation and the
// workspace as they were before the visit, and its request to the model
// carries, before the prompt, the note that an earlier attempt of this
// very turn was interrupted after that tool call. The note is the visit's
// _retry_note too.
func TestInterruptedVisitKnowsWhatHappened(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { interruptAfterToolCall(t, sig) })
	}
}

func interruptAfterToolCall(t *testing.T, sig syscall.Signal) {
	k := newKillRig(t, retryNoteModel)
	env := append(k.env, "TETHER_SHUTDOWN_GRACE=1s")
	a := startWorkerProcess(t, k.bin, env)
	g := testGraph(t, "retry-note")
	id := "retry-note-" + strings.ToLower(sig.String())
	run, err := k.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Options: runapi.Options{HeartbeatTimeout: 5 * time.Second}})
	require.NoError(t, err)

	// The server holds a heartbeat that reports the tool call: then the
	// worker goes.
	p := waitProgress(t, k.c, id, func(p agent.Progress) bool { return p.ToolCalls >= 1 })
	require.Contains(t, p.Calls, "Bash echo pushed-1")
	require.NoError(t, a.cmd.Process.Signal(sig))
	_, _ = a.cmd.Process.Wait()
	startWorkerProcess(t, k.bin, env)

	ctx, cancel := context.WithTimeout(context.Background(), runWait)
	defer cancel()
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res))

	var noted []string
	for _, r := range k.fake.Requests() {
		for _, pr := range r.Prompts {
			if strings.Contains(pr, "an earlier attempt of this very turn was interrupted") {
				noted = append(noted, pr)
			}
		}
	}
	require.NotEmpty(t, noted, "the next attempt's request to the model carries the note")
	note := noted[0]
	assert.Contains(t, note, "`Bash echo pushed-1`", "the note names the lost attempt's tool call")
	assert.Contains(t, note, "check before you repeat anything with effects outside the workspace")
	assert.True(t, strings.Index(note, "interrupted") < strings.Index(note, "write the release note"), "the note comes before the prompt")

	blobs, err := blob.Open(context.Background(), "file://"+k.store)
	require.NoError(t, err)
	cp, err := runstore.New(blobs).Latest(context.Background(), id)
	require.NoError(t, err)
	out := cp.Outputs["writer"]
	got, _ := out[agent.RetryNoteKey].(string)
	assert.Contains(t, got, "`Bash echo pushed-1`", "the visit's output keeps the note")
	text, _ := out["text"].(string)
	assert.Contains(t, text, "turn 1", "the conversation was restored as it was before the visit: this is still its first turn")
}

// waitProgress waits until the run's pending visit has heartbeated
// progress that ok accepts, and returns it.
func waitProgress(t *testing.T, c client.Client, id string, ok func(agent.Progress) bool) agent.Progress {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		d, err := c.DescribeWorkflow(context.Background(), id, "")
		if err == nil {
			for _, pa := range d.RawResponse.GetPendingActivities() {
				ps := pa.GetHeartbeatDetails().GetPayloads()
				var p agent.Progress
				if len(ps) > 0 && dc.FromPayload(ps[0], &p) == nil && ok(p) {
					return p
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("run %s: its visit never reported the progress awaited", id)
	return agent.Progress{}
}

// retryOfTool prints TETHER_RETRY_OF when it is set, and otherwise runs
// long enough to be killed.
const retryOfTool = `if [ -n "$TETHER_RETRY_OF" ]; then echo "retry-of: $TETHER_RETRY_OF"; else echo first; sleep 60; fi`

// TestToolRetriedAfterAKillSeesRetryOf: the worker running a tool visit is
// killed; the server starts the visit again on a new worker, where the
// command finds TETHER_RETRY_OF saying that an attempt was lost after it
// had started, and the run's history has the visit's _retry_note.
func TestToolRetriedAfterAKillSeesRetryOf(t *testing.T) {
	bin, _, c, env := processRig(t)
	g := testGraph(t, "retry-tool", "TOOL_COMMAND", fmt.Sprintf("%q", retryOfTool))
	id := "retry-of-kill"
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Options: runapi.Options{HeartbeatTimeout: 2 * time.Second}})
	require.NoError(t, err)
	w := startWorkerProcess(t, bin, env)
	waitProgress(t, c, id, func(p agent.Progress) bool { return p.Node == "work" && p.Elapsed > 0 })
	require.NoError(t, w.cmd.Process.Kill())
	_, _ = w.cmd.Process.Wait()
	startWorkerProcess(t, bin, env)

	ctx, cancel := context.WithTimeout(context.Background(), runWait)
	defer cancel()
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res))
	out := toolOutput(t, c, id)
	stdout, _ := out["stdout"].(string)
	require.Contains(t, stdout, `retry-of: {"attempts":1,"cause":"its worker was lost or stopped","started":true`, "the retried command sees TETHER_RETRY_OF")
	assert.NotContains(t, stdout, "first")
	assert.Contains(t, out[agent.RetryNoteKey], "An earlier attempt of this tool visit was interrupted", "the run's history has the note")
}

// toolOutput is the output of the run's last completed Visit, as the
// run's Temporal history recorded it.
func toolOutput(t *testing.T, c client.Client, id string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out map[string]any
	iter := c.GetWorkflowHistory(ctx, id, "", false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			var res struct {
				Output map[string]any `json:"output"`
			}
			if converter.GetDefaultDataConverter().FromPayloads(a.GetResult(), &res) == nil && res.Output != nil {
				out = res.Output
			}
		}
	}
	require.NotNil(t, out, "the run's history has a visit's result")
	return out
}

// TestRestartedVisitTellsTheTool: a tool visit's snapshot cannot be stored
// (an injected store failure), a failure that may pass, so the run starts
// the visit again itself; the new activity is told what the failed one
// did, and its command finds TETHER_RETRY_OF with the cause.
func TestRestartedVisitTellsTheTool(t *testing.T) {
	h := newHarness(t, "")
	var failed atomic.Bool
	h.wrapBlobs(func(key string) error {
		if strings.Contains(key, "/workspace/") && failed.CompareAndSwap(false, true) {
			return errors.New("injected store failure")
		}
		return nil
	})
	h.startWorker()
	g := testGraph(t, "retry-tool", "name: retry-of", "name: retry-note-restart",
		"TOOL_COMMAND", fmt.Sprintf("%q", `echo "retry-of: ${TETHER_RETRY_OF:-none}"; echo made > made.txt`))
	id := "retry-note-restart"
	res, err := h.result(h.start(id, g, nil))
	require.NoError(t, err)
	require.Equal(t, "completed", res.Status)
	require.True(t, failed.Load(), "the store failure was injected")
	st := h.state(id)
	stdout, _ := st.Outputs["work"]["stdout"].(string)
	assert.Contains(t, stdout, `retry-of: {"attempts":1,"cause":"it failed: `, "the restarted command sees what failed")
	assert.Contains(t, stdout, `"started":true`)
	assert.Contains(t, st.Outputs["work"][agent.RetryNoteKey], "An earlier attempt of this tool visit was interrupted")
	h.recordHistory("retry-note", id)

	// The console's page of the visit shows what it was told.
	c := startConsole(t, h, nil)
	resp, err := http.Get(c.URL + "/runs/" + id + "/visits/work/1")
	require.NoError(t, err)
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
	require.Contains(t, string(page), `id="retry-note"`)
	require.Contains(t, string(page), "An earlier attempt of this tool visit was interrupted (it failed: ")
}

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// cliBackends points every CLI backend of the harness's workers at one fake
// model server and the pinned CLIs, with HOME isolated.
func cliBackends(t *testing.T, h *harness) *fakemodel.Server {
	t.Helper()
	bin := clitest.Isolate(t)
	fake := fakemodel.Start(t)
	ask := clitest.AskUserCommand(t)
	h.backends = func(testing.TB) backend.Config {
		return backend.Config{CLIBin: bin, Vars: clitest.FakeVars(fake), AskUser: ask, TempDir: t.TempDir()}
	}
	return fake
}

// cliBackendsHarness is cliHarness whose workers run the pinned CLIs
// against the fake model it returns (cliBackends).
func cliBackendsHarness(t *testing.T) (*harness, string, *fakemodel.Server) {
	t.Helper()
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	fake := cliBackends(t, h)
	h.startWorker()
	h.useCLI(t)
	return h, dir, fake
}

func persistGraph(t *testing.T, backendName string) *graph.Graph {
	t.Helper()
	script := ""
	if backendName == "scripted" {
		script = `, script: ["turn {{.Turn}}: {{range .History}}{{.Prompt}} | {{end}}{{.Prompt}}"]`
	}
	src := fmt.Sprintf(`
name: persist-%[1]s
start: writer
nodes:
  - {id: writer, kind: agent, backend: %[1]s, session: persist, prompt: "draft {{.visit}}"%[2]s}
  - {id: judge, kind: human, question: "Approve?"}
  - {id: done, kind: end}
edges:
  - {from: writer, to: judge}
  - {from: judge, to: done, when: 'output.answer == "approve"'}
  - {from: judge, to: writer}
`, backendName, script)
	return parseGraph(t, src, "persist.yaml")
}

// TestPersistAcrossWorkers is issue 6's end-to-end proof for each backend
// with the persist capability (every one the catalogue lists):
// a persist writer loops three visits through a judge, and between visits
// the worker is stopped and a new one starts with an empty state root. The
// writer's third reply shows it saw turns 1 and 2: its conversation came
// back from the blob store, not from any disk.
func TestPersistAcrossWorkers(t *testing.T) {
	for _, b := range persistBackends() {
		t.Run(b.Name, func(t *testing.T) {
			h := newHarness(t, "")
			if b.CLI != "" {
				cliBackends(t, h)
			}
			persistLoop(t, h, b.Name)
		})
	}
}

// TestPersistAcrossWorkersOnS3 runs the same loop with the blob store on a
// real S3 server (versitygw).
func TestPersistAcrossWorkersOnS3(t *testing.T) {
	h := newHarness(t, s3Store(t, "e2e"))
	persistLoop(t, h, "scripted")
}

// persistBackends are the backends with the persist capability, in
// catalogue order.
func persistBackends() []agent.Facts {
	var out []agent.Facts
	for _, b := range catalogue.All() {
		if b.Implemented && b.Persist {
			out = append(out, b)
		}
	}
	return out
}

func persistLoop(t *testing.T, h *harness, b string) {
	h.startWorker()
	id := "persist-" + strings.ReplaceAll(b, "_", "-")
	run := h.start(id, persistGraph(t, b), nil)
	var sessions []string
	var slots []runstore.NodeSessionSlot
	for visit := 1; visit <= 3; visit++ {
		q := h.waitQuestion(id)
		require.Equal(t, fmt.Sprintf("judge-%d", visit), q.ID)
		st := h.state(id)
		sessions = append(sessions, st.Sessions["writer"].SessionID)
		cp, err := h.runs.Latest(context.Background(), id)
		require.NoError(t, err)
		slots = append(slots, cp.NodeSessions["writer"])
		// Recycle the pod: the next visit lands on an empty root.
		h.stopWorker()
		h.startWorker()
		h.reviseUntil(id, q.ID, visit, 3)
	}
	res, err := h.result(run)
	require.NoError(t, err)
	require.Equal(t, "writer>judge>writer>judge>writer>judge>done", pathString(res))
	require.NotEmpty(t, sessions[0])
	require.Equal(t, []string{sessions[0], sessions[0], sessions[0]}, sessions, "one conversation across all visits")

	cp, err := h.runs.Latest(context.Background(), id)
	require.NoError(t, err)
	text, _ := cp.Outputs["writer"]["text"].(string)
	require.Contains(t, text, "turn 3", "the third reply counts three turns")
	require.Contains(t, text, "draft 1")
	require.Contains(t, text, "draft 2")
	// Visit 1 packed the whole session. Visit 2, on a new worker that
	// restored the slot from the store, packed only what it added, as a
	// part after it; visit 3 restored both, and added a part too unless the
	// parts had come to outweigh the base (a small session), when it packs
	// the whole session again.
	require.Empty(t, slots[0].Parts)
	require.Len(t, slots[1].Parts, 1, "visit 2 adds a part to the slot")
	require.Equal(t, slots[0].StateRef, slots[1].StateRef)
	if slot := slots[2]; slot.StateRef == slots[0].StateRef {
		require.Len(t, slot.Parts, 2, "visit 3 adds a second part")
		require.Equal(t, slots[1].Parts[0], slot.Parts[0])
	} else {
		require.Empty(t, slot.Parts, "visit 3 packed the whole session again")
		require.GreaterOrEqual(t, slots[1].Parts[0].Size, slots[1].Size, "only when the parts outweighed the base")
	}
	if b == "scripted" {
		h.recordHistory("persist-loop-workspace", id)
		h.recordHistory("persist-loop-incremental", id)
	}
}

// TestAskUserAcrossWorkers: a writer asks the user in the middle of its
// visit; the worker is replaced while the run waits; after the answer the
// visit resumes the same conversation from the pause ref on the new worker.
func TestAskUserAcrossWorkers(t *testing.T) {
	for _, b := range []string{"scripted", "claude_code", "gemini"} {
		t.Run(b, func(t *testing.T) {
			h := newHarness(t, "")
			prompt := `"ASK_USER: which color?"`
			script := ""
			if b == "scripted" {
				prompt = `"pick a color"`
				script = `, script: ["ASK: which color?", "turn {{.Turn}}: painted it after hearing {{.Prompt}}"]`
			} else {
				cliBackends(t, h)
			}
			g, err := graph.Parse([]byte(fmt.Sprintf(`
name: ask
start: writer
nodes:
  - {id: writer, kind: agent, backend: %s, session: persist, prompt: %s%s}
  - {id: done, kind: end}
edges:
  - {from: writer, to: done}
`, b, prompt, script)), "ask.yaml")
			require.NoError(t, err)
			h.startWorker()
			id := "ask-" + strings.ReplaceAll(b, "_", "-")
			run := h.start(id, g, nil)
			q := h.waitQuestion(id)
			require.Equal(t, "writer-1-q1", q.ID)
			require.Contains(t, q.Text, "which color?")
			cp, err := h.runs.Latest(context.Background(), id)
			require.NoError(t, err)
			require.NotNil(t, cp.Pause)
			require.NotEmpty(t, cp.Pause.BackendSessionStateRef)
			require.Empty(t, cp.NodeSessions)
			paused := cp.Pause.SessionID

			h.stopWorker()
			h.startWorker()
			h.answer(id, q.ID, "teal")
			_, err = h.result(run)
			require.NoError(t, err)
			cp, err = h.runs.Latest(context.Background(), id)
			require.NoError(t, err)
			require.Nil(t, cp.Pause)
			require.Equal(t, paused, cp.NodeSessions["writer"].SessionID, "the answer continued the paused conversation")
			text, _ := cp.Outputs["writer"]["text"].(string)
			require.Contains(t, text, "teal")
			require.Contains(t, text, "turn 2")
			if b == "scripted" {
				h.recordHistory("ask-user-workspace", id)
			}
		})
	}
}

// faultyBlobs makes the worker's checkpoint writes fail while armed.
type faultyBlobs struct {
	mu    sync.Mutex
	armed bool
}

func (f *faultyBlobs) set(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = v
}

func (f *faultyBlobs) on() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.armed
}

// TestFailStopThenResume: the checkpoint after a persist visit fails; the
// run fails resumably with the new slot in its failure; `tether resume`
// starts a new execution that continues the same conversation.
func TestFailStopThenResume(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	faults := &faultyBlobs{}
	h.wrapBlobs(func(key string) error {
		if faults.on() && strings.Contains(key, "/checkpoints/") {
			return fmt.Errorf("injected checkpoint failure")
		}
		return nil
	})
	h.startWorker()
	id := "failstop"
	// The writer's first visit succeeds, but the required checkpoint that
	// would commit its slot fails.
	faults.set(true)
	run := h.start(id, persistGraph(t, "scripted"), nil)
	_, err := h.result(run)
	require.Error(t, err)
	require.Contains(t, err.Error(), "FailedResumable")
	faults.set(false)
	_, err = h.runs.Latest(context.Background(), id)
	require.Error(t, err, "the run store never received a checkpoint")

	out := h.tether(t, dir, "resume", id)
	require.Contains(t, out, "resumed from the fail-stop's own checkpoint")
	run = h.c.GetWorkflow(context.Background(), id, "")
	q := h.waitQuestion(id)
	h.answer(id, q.ID, "approve")
	_, err = h.result(run)
	require.NoError(t, err)
	cp, err := h.runs.Latest(context.Background(), id)
	require.NoError(t, err)
	text, _ := cp.Outputs["writer"]["text"].(string)
	require.Contains(t, text, "turn 2: draft 1 | draft 2", "the resumed visit continued the conversation")
	h.recordHistory("fail-stop-resume-workspace", id)
}

// TestLongLoopContinuesAsNew: a 2,000-visit loop completes by continuing as
// new with its checkpoint before history grows past the threshold.
func TestLongLoopContinuesAsNew(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	g := testGraph(t, "long")
	run := h.start("long", g, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))
	cp, err := h.runs.Latest(context.Background(), "long")
	require.NoError(t, err)
	require.Equal(t, 2000, cp.Visits["tick"])
	require.Equal(t, "completed", cp.Status)
	// The run really continued as new: more than one execution.
	d, err := h.c.DescribeWorkflow(context.Background(), "long", "")
	require.NoError(t, err)
	require.NotEqual(t, run.GetFirstExecutionRunID(), d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId())
	// Each execution stopped well short of Temporal's limits.
	events := 0
	it := h.c.GetWorkflowHistory(context.Background(), "long", run.GetFirstExecutionRunID(), false, 0)
	for it.HasNext() {
		_, err := it.Next()
		require.NoError(t, err)
		events++
	}
	require.Greater(t, events, 100)
	require.Less(t, events, runapi.DefaultContinueAsNewEvents+200, "the first execution continued as new near its threshold")
}

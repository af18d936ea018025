package workflows

import (
	"context"
	"embed"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// graphFiles holds the graphs the tests run, one YAML file each.
//
//go:embed testdata/graphs/*.yaml
var graphFiles embed.FS

// graphYAML returns the source of testdata/graphs/name.yaml.
func graphYAML(name string) string {
	b, err := graphFiles.ReadFile("testdata/graphs/" + name + ".yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// faultyStore wraps a blob store and fails writes whose key contains
// failPut (checkpoints, sessions) while armed.
type faultyStore struct {
	blob.Store
	mu      sync.Mutex
	failPut string
	// after counts matching puts to let through before failing.
	after int
	// landThenFail writes the object, then reports an error: a client
	// timeout after the server committed.
	landThenFail bool
	deleted      []string
	// landedFailed are the keys written and then reported as failed.
	landedFailed []string
	// slow delays every put whose key contains slowPut by that long.
	slowPut string
	slow    time.Duration
}

var errInjected = errors.New("injected store fault")

func (f *faultyStore) arm(substr string, after int, landThenFail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failPut, f.after, f.landThenFail = substr, after, landThenFail
}

func (f *faultyStore) disarm() { f.arm("", 0, false) }

func (f *faultyStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts ...blob.PutOption) error {
	f.mu.Lock()
	fail := f.failPut != "" && strings.Contains(key, f.failPut)
	if fail && f.after > 0 {
		f.after--
		fail = false
	}
	land := f.landThenFail
	var wait time.Duration
	if f.slowPut != "" && strings.Contains(key, f.slowPut) {
		wait = f.slow
	}
	f.mu.Unlock()
	time.Sleep(wait)
	if fail && !land {
		return errInjected
	}
	if err := f.Store.Put(ctx, key, r, size, opts...); err != nil {
		return err
	}
	if fail {
		f.mu.Lock()
		f.landedFailed = append(f.landedFailed, key)
		f.mu.Unlock()
		return errInjected
	}
	return nil
}

func (f *faultyStore) Delete(ctx context.Context, key string) error {
	f.mu.Lock()
	f.deleted = append(f.deleted, key)
	f.mu.Unlock()
	return f.Store.Delete(ctx, key)
}

func (f *faultyStore) deletedKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.deleted...)
}

type GraphRunSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env    *testsuite.TestWorkflowEnvironment
	store  *faultyStore
	runs   *runstore.Store
	agents map[string]*fakeAgent
	acts   *activities.Activities
	// logs are what the workflow logged in this test's environments.
	logs *logs
}

func TestGraphRun(t *testing.T) { suite.Run(t, new(GraphRunSuite)) }

func (s *GraphRunSuite) SetupTest() {
	mem, err := blob.Open(context.Background(), "mem://")
	s.Require().NoError(err)
	s.store = &faultyStore{Store: mem}
	s.runs = runstore.New(s.store)
	s.agents = map[string]*fakeAgent{}
	var bs activities.Backends
	for _, name := range []string{"scripted", "claude_code", "kimi"} {
		a := newFakeAgent(name)
		s.agents[name] = a
		bs = append(bs, a)
	}
	dir := s.T().TempDir()
	s.acts = &activities.Activities{
		Blobs: s.store, Runs: s.runs, Backends: bs,
		StateDir: dir + "/state", WorkDir: dir + "/work", Queue: runapi.WorkerQueue("test"),
		Workspaces: workspace.NewManager(dir+"/state/workspaces", s.store, workspace.Limits{}, nil),
	}
	s.logs = &logs{}
	s.SetLogger(s.logs)
	s.env = loadTolerant(s.NewTestWorkflowEnvironment())
	s.env.RegisterWorkflowWithOptions(GraphRun, workflow.RegisterOptions{Name: runapi.WorkflowType})
	s.env.RegisterActivity(s.acts)
}

// recordedBefore makes the run one recorded before change (and before
// the baseline): both GetVersion calls answer DefaultVersion.
func (s *GraphRunSuite) recordedBefore(change string, max workflow.Version) {
	s.env.OnGetVersion(changeBaseline, workflow.DefaultVersion, versionBaseline).Return(workflow.DefaultVersion)
	s.env.OnGetVersion(change, workflow.DefaultVersion, max).Return(workflow.DefaultVersion)
}

func (s *GraphRunSuite) parse(src string) *graph.Graph {
	g, err := graph.Parse([]byte(src), "test.yaml")
	s.Require().NoError(err)
	return g
}

func (s *GraphRunSuite) run(src string, inputs map[string]any) (*runapi.GraphRunResult, error) {
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(src), Inputs: inputs})
	s.Require().True(s.env.IsWorkflowCompleted())
	if err := s.env.GetWorkflowError(); err != nil {
		return nil, err
	}
	var res runapi.GraphRunResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	return &res, nil
}

func (s *GraphRunSuite) latest() *runstore.Checkpoint {
	cp, err := s.runs.Latest(context.Background(), "run-1")
	s.Require().NoError(err)
	return cp
}

func pathOf(res *runapi.GraphRunResult) string {
	var p []string
	for _, st := range res.Path {
		p = append(p, st.Node)
	}
	return strings.Join(p, ">")
}

var loopGraph = graphYAML("loop")

func (s *GraphRunSuite) TestLoopConditionsAndMappings() {
	res, err := s.run(loopGraph, nil)
	s.Require().NoError(err)
	s.Equal("writer>judge>writer>judge>writer>judge>done", pathOf(res))
	s.Equal("done", res.EndNode)

	cp := s.latest()
	s.Equal(runstore.StatusCompleted, cp.Status)
	s.Equal(3, cp.Visits["writer"])
	// Visit 3 of the persist writer continued its own conversation: the
	// same session, now three turns long, restored from its slot.
	out := cp.Outputs["writer"]
	s.Contains(out["text"], "turn 3 of scripted-s1")
	s.Equal("scripted-s1", out[agent.SessionIDKey])
	s.Equal("scripted", out[agent.BackendKey])
	s.Equal("fp-scripted", out[agent.SessionFingerprintKey])
	// The mapped feedback reached the prompt; the default input carried
	// the declared input's default.
	calls := s.agents["scripted"].requests()
	s.Contains(calls[2].Prompt, "fix: more otters")
	s.Contains(calls[0].Prompt, "write about otters (visit 1)")
	// Outputs and loop snapshots keep the agent's output, without the
	// transient keys and refs it tried to set.
	s.Equal("ok", out["draft"])
	s.NotEmpty(cp.LoopSnapshots)
	for _, o := range append([]map[string]any{out}, snapshotOutputs(cp)...) {
		s.NotContains(o, "_session_state_ref")
		s.NotContains(o, agent.SessionStateBlobKey)
		s.NotContains(o, agent.SessionStateKey)
	}
	// The earlier slots' blobs are retained for rewinds; no other blob of
	// the writer remains.
	s.ElementsMatch(append(slices.Clone(cp.RetainedSessions["writer"]), cp.NodeSessions["writer"].StateRef), s.writerSlotBlobs())
	s.Len(cp.RetainedSessions["writer"], 2)
}

func snapshotOutputs(cp *runstore.Checkpoint) []map[string]any {
	var out []map[string]any
	for _, snap := range cp.LoopSnapshots {
		out = append(out, snap.Output)
	}
	return out
}

func (s *GraphRunSuite) writerSlotBlobs() []string {
	keys, err := s.store.List(context.Background(), "")
	s.Require().NoError(err)
	var slots []string
	for _, k := range keys {
		if strings.Contains(k.Key, "/sessions/writer/") {
			slots = append(slots, k.Key)
		}
	}
	return slots
}

// A slot blob that falls out of the session_history window is deleted
// after the checkpoint that superseded it, and only then.
func (s *GraphRunSuite) TestSlotBlobsBeyondTheHistoryAreDeleted() {
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(persistLoop), Options: runapi.Options{SessionHistory: 1}})
	s.Require().NoError(s.env.GetWorkflowError())
	cp := s.latest()
	s.Len(cp.RetainedSessions["writer"], 1)
	s.ElementsMatch([]string{cp.RetainedSessions["writer"][0], cp.NodeSessions["writer"].StateRef}, s.writerSlotBlobs())
	s.Len(s.store.deletedKeys(), 1, "the first slot's blob")
}

func (s *GraphRunSuite) TestNoEdgeMatchedNamesNodeAndOutput() {
	_, err := s.run(graphYAML("stuck"), nil)
	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(err, &appErr)
	s.Equal(runapi.ErrTypeNoEdge, appErr.Type())
	s.Contains(appErr.Error(), `node "a"`)
	s.Contains(appErr.Error(), `verdict="maybe"`)
	s.Equal(runstore.StatusFailed, s.latest().Status)
}

func (s *GraphRunSuite) TestMaxVisits() {
	_, err := s.run(graphYAML("forever"), nil)
	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(err, &appErr)
	s.Equal(runapi.ErrTypeMaxVisits, appErr.Type())
	s.Contains(appErr.Error(), "4th time but max_visits is 3")
	s.Len(s.agents["scripted"].requests(), 3)
}

var fanoutGraph = graphYAML("fanout")

func (s *GraphRunSuite) TestFanoutAndJoin() {
	res, err := s.run(fanoutGraph, nil)
	s.Require().NoError(err)
	s.Equal("left+right", res.Output["sides"])
	s.Equal(1, s.latest().Visits["left"])
	s.Equal(1, s.latest().Visits["right"])
	s.Equal(1, s.latest().Visits["meet"])
}

func (s *GraphRunSuite) TestPersistInFanoutBranchFailsAtRunTime() {
	_, err := s.run(strings.Replace(fanoutGraph, "{id: left, kind: agent, backend: scripted,", "{id: left, kind: agent, backend: scripted, session: persist,", 1), nil)
	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(err, &appErr)
	s.Equal(runapi.ErrTypeGraph, appErr.Type())
	s.Contains(appErr.Error(), "persist inside a fan-out branch")
}

var humanGraph = graphYAML("approve")

func (s *GraphRunSuite) TestAnswerBySignal() {
	s.env.RegisterDelayedCallback(func() {
		st := s.queryState()
		s.Require().Len(st.Questions, 1)
		s.Equal("ask-1", st.Questions[0].ID)
		s.Equal("Publish Otters?", st.Questions[0].Text)
		s.Equal(runstore.StatusWaiting, st.Status)
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "yes"})
	}, time.Hour)
	res, err := s.run(humanGraph, map[string]any{"title": "Otters"})
	s.Require().NoError(err)
	s.Equal("yes", res.Output["answer"])
}

func (s *GraphRunSuite) TestAnswerByUpdateRejectsBadAnswers() {
	var rejectedUnknown, accepted, rejectedTwice error
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(runapi.UpdateAnswer, "u1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { rejectedUnknown = err },
			OnAccept: func() { s.Fail("unknown question accepted") },
		}, runapi.Answer{QuestionID: "nope", Text: "yes"})
		s.env.UpdateWorkflow(runapi.UpdateAnswer, "u2", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { s.Fail("good answer rejected", err) },
			OnAccept:   func() {},
			OnComplete: func(any, error) { accepted = nil },
		}, runapi.Answer{QuestionID: "ask-1", Text: "ship it"})
		s.env.UpdateWorkflow(runapi.UpdateAnswer, "u3", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { rejectedTwice = err },
			OnAccept: func() {},
		}, runapi.Answer{QuestionID: "ask-1", Text: "again"})
	}, time.Hour)
	res, err := s.run(humanGraph, map[string]any{"title": "x"})
	s.Require().NoError(err)
	s.Require().NoError(accepted)
	s.Equal("ship it", res.Output["answer"])
	s.Require().Error(rejectedUnknown)
	s.Contains(rejectedUnknown.Error(), `no pending question with this id: "nope" (pending: ask-1)`)
	s.Require().Error(rejectedTwice)
	s.Contains(rejectedTwice.Error(), "already answered")
}

func (s *GraphRunSuite) queryState() *runapi.State {
	v, err := s.env.QueryWorkflow(runapi.QueryState)
	s.Require().NoError(err)
	var st runapi.State
	s.Require().NoError(v.Get(&st))
	return &st
}

func (s *GraphRunSuite) TestToolNode() {
	res, err := s.run(graphYAML("oracle"), map[string]any{"what": "otters"})
	s.Require().NoError(err)
	s.Equal("checking otters\n", res.Output["said"])
}

func TestMintIDIsDeterministic(t *testing.T) {
	// The ids come from the execution's run id, the workflow clock and a
	// counter: two executions with the same run id and clock mint the same
	// ids, as a replay of one execution does.
	mint := func() []string {
		var ts testsuite.WorkflowTestSuite
		env := loadTolerant(ts.NewTestWorkflowEnvironment())
		env.SetStartTime(time.Unix(1_800_000_000, 0))
		wf := func(ctx workflow.Context) ([]string, error) {
			r := &runImpl{}
			a := r.mintID(ctx)
			// A timer moves the clock between two mints, like the visits
			// between two mints of a run.
			if err := workflow.Sleep(ctx, time.Minute); err != nil {
				return nil, err
			}
			return []string{a, r.mintID(ctx)}, nil
		}
		env.RegisterWorkflow(wf)
		env.ExecuteWorkflow(wf)
		var ids []string
		require.NoError(t, env.GetWorkflowResult(&ids))
		return ids
	}
	ids := mint()
	require.Len(t, ids, 2)
	require.NotEqual(t, ids[0], ids[1])
	require.Len(t, ids[0], 26)
	require.Equal(t, ids, mint(), "the same execution mints the same ids")
}

// TestMintIDsReplay replays a committed history of a persist run and checks
// that every blob key the replay would mint is the key the original run
// wrote: a retried Put after a replay writes the same key.
func TestMintIDsReplay(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "histories", "persist-loop.json"))
	require.NoError(t, err)
	// Payloads are base64 in an exported history.
	var payloads strings.Builder
	for _, m := range regexp.MustCompile(`"data":\s*"([A-Za-z0-9+/=]+)"`).FindAllStringSubmatch(string(raw), -1) {
		if b, err := base64.StdEncoding.DecodeString(m[1]); err == nil {
			payloads.Write(b)
			payloads.WriteByte('\n')
		}
	}
	var keys []string
	for _, m := range regexp.MustCompile(`runs/[^"/]+/sessions/writer/(pause/)?[0-9A-Z]{26}`).FindAllString(payloads.String(), -1) {
		if !slices.Contains(keys, m) {
			keys = append(keys, m)
		}
	}
	require.NotEmpty(t, keys, "the history names its session keys")
	r := worker.NewWorkflowReplayer()
	var minted []string
	r.RegisterWorkflowWithOptions(GraphRun, workflow.RegisterOptions{Name: runapi.WorkflowType})
	mintHook = func(id string) { minted = append(minted, id) }
	defer func() { mintHook = nil }()
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("..", "testdata", "histories", "persist-loop.json")))
	for _, k := range keys {
		require.Contains(t, minted, k[strings.LastIndex(k, "/")+1:], "replay mints the key the run wrote: %s", k)
	}
}

// A long output stays whole as the node's output, but its loop snapshots
// keep it cut, so a long loop's checkpoint stays bounded.
func (s *GraphRunSuite) TestLoopSnapshotsCutLongValues() {
	long := strings.Repeat("x", 10_000)
	res, err := s.run(`
name: long
start: a
nodes:
  - {id: a, kind: agent, backend: scripted, prompt: 'JSON:{"blob": "`+long+`"}', max_visits: 3}
  - {id: done, kind: end}
edges:
  - {from: a, to: done, when: 'visits >= 3'}
  - {from: a, to: a}
`, nil)
	s.Require().NoError(err)
	s.Equal("done", res.EndNode)
	cp := s.latest()
	s.Equal(long, cp.Outputs["a"]["blob"])
	s.Require().Len(cp.LoopSnapshots, 2)
	for _, snap := range cp.LoopSnapshots {
		v, _ := snap.Output["blob"].(string)
		s.Less(len(v), 2200)
		s.Contains(v, "(10000 bytes)")
	}
}

// An answer signalled while the run saves the checkpoint that says it
// waits (the moment `TetherStatus="waiting"` shows) is taken: the question
// is known before the run says it waits (changeQuestionsFirst). Before, it
// was dropped as unknown and the run waited for good.
func (s *GraphRunSuite) TestAnswerSignalledDuringTheWaitingCheckpointIsTaken() {
	signalled := false
	s.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, args []interface{}) {
		if info.ActivityType.Name != activities.SaveCheckpointName || signalled || len(args) == 0 {
			return
		}
		if req, ok := args[0].(*activities.CheckpointRequest); ok && req.Checkpoint.Status == runstore.StatusWaiting {
			signalled = true
			s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "yes"})
		}
	})
	res, err := s.run(humanGraph, map[string]any{"title": "Otters"})
	s.Require().NoError(err)
	s.True(signalled)
	s.Equal("yes", res.Output["answer"])
}

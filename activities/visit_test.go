package activities

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/resolve"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/internal/workspace"
)

// Visit runs agent and tool nodes only; anything else is a bad request,
// refused before any directory is made.
func TestVisitRefusesWhatIsNotAVisit(t *testing.T) {
	a := newActs(t, blob.NewMem())
	_, err := a.Visit(context.Background(), nil)
	assert.Equal(t, ErrTypeBadRequest, appType(err))
	for _, kind := range []graph.Kind{graph.KindHuman, graph.KindEnd} {
		_, err = a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "n", Node: graph.Node{ID: "n", Kind: kind}, Started: time.Now()})
		assert.Equal(t, ErrTypeBadRequest, appType(err), "%s node: %v", kind, err)
	}
	_, err = os.Stat(a.WorkDir)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// A node's workdir is inside the run's workspace, or an absolute
// directory below a root the worker's operator names; a relative one that
// climbs out, and an absolute one anywhere else, are refused.
func TestVisitWorkdir(t *testing.T) {
	a := newActs(t, blob.NewMem())
	tool := func(wd string) (*VisitResult, error) {
		return a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "t", Visit: 1, Started: time.Now(),
			Node: graph.Node{ID: "t", Kind: graph.KindTool, Workdir: wd, Run: []string{"pwd"}}})
	}
	_, err := tool("../escape")
	assert.Equal(t, ErrTypeWorkdirRefused, appType(err), "%v", err)
	res, err := tool("sub/dir")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(a.WorkDir, "r1", "sub", "dir"), trimmed(res.Output["stdout"]))
	res, err = tool("")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(a.WorkDir, "r1"), trimmed(res.Output["stdout"]))
	roots := t.TempDir()
	abs := filepath.Join(roots, "checkout")
	_, err = tool(abs)
	assert.Equal(t, ErrTypeWorkdirRefused, appType(err), "no root named: %v", err)
	assert.ErrorContains(t, err, "TETHER_WORKDIR_ROOTS")
	a.WorkdirRoots = []string{roots}
	res, err = tool(abs)
	require.NoError(t, err)
	assert.Equal(t, abs, trimmed(res.Output["stdout"]), "an absolute workdir below a root is used as it is")
}

func trimmed(v any) string {
	s, _ := v.(string)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	return s
}

// A node's own conversation (its slot, or the one it paused in) is not
// continued under settings other than those it began with: the visit
// runs fresh with the keys stripped and says why. Another node's
// conversation (inherit) is continued whatever its settings.
func TestVisitRefusesAConversationUnderOtherSettings(t *testing.T) {
	store := blob.NewMem()
	v1, _ := twoSlots(t, store, time.Now())
	for _, kind := range []resolve.Kind{resolve.UnpackOwnSlot, resolve.UnpackPause} {
		res, err := newActs(t, store).Visit(context.Background(), &VisitRequest{
			RunID: "r1", NodeID: "writer", Visit: 3, Node: echoWriter, Backend: "scripted", Started: time.Now(),
			Input:   map[string]any{agent.SessionIDKey: v1.SessionID, agent.SessionFingerprintKey: "fp-other"},
			Session: &SessionPlan{Kind: kind.String(), SessionID: v1.SessionID, Fingerprint: "fp-other", StateRef: v1.PackedTo, Digest: v1.PackDigest},
		})
		require.NoError(t, err)
		assert.Contains(t, res.SessionNote, "settings changed", kind)
		assert.NotEqual(t, v1.SessionID, res.SessionID, kind)
		assert.Contains(t, res.Output["text"], "id=[] fp=[]", kind)
	}
	// The recorded fingerprint is today's: the conversation continues.
	res, err := newActs(t, store).Visit(context.Background(), &VisitRequest{
		RunID: "r1", NodeID: "writer", Visit: 3, Node: echoWriter, Backend: "scripted", Started: time.Now(),
		Session: &SessionPlan{Kind: resolve.UnpackOwnSlot.String(), SessionID: v1.SessionID, Fingerprint: v1.Fingerprint, StateRef: v1.PackedTo, Digest: v1.PackDigest},
	})
	require.NoError(t, err)
	assert.Empty(t, res.SessionNote)
	assert.Equal(t, v1.SessionID, res.SessionID)
	// inherit takes another node's conversation, whose settings differ by design.
	res, err = newActs(t, store).Visit(context.Background(), &VisitRequest{
		RunID: "r1", NodeID: "writer", Visit: 3, Node: echoWriter, Backend: "scripted", Started: time.Now(),
		Session: &SessionPlan{Kind: resolve.UnpackSourceSlot.String(), SessionID: v1.SessionID, Fingerprint: "fp-other", StateRef: v1.PackedTo, Digest: v1.PackDigest},
	})
	require.NoError(t, err)
	assert.Empty(t, res.SessionNote)
	assert.Equal(t, v1.SessionID, res.SessionID)
}

// With no blob to unpack (the has-session plan), the visit continues the
// session only if this worker's live root holds it; elsewhere it runs
// fresh with the keys stripped.
func TestVisitHasSessionPlan(t *testing.T) {
	store := blob.NewMem()
	a := newActs(t, store)
	v1, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: echoWriter, Backend: "scripted", Started: time.Now()})
	require.NoError(t, err)
	plan := func() *VisitRequest {
		return &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 2, Node: echoWriter, Backend: "scripted", Started: time.Now(),
			Input:   map[string]any{agent.SessionIDKey: v1.SessionID},
			Session: &SessionPlan{Kind: resolve.HasSession.String(), SessionID: v1.SessionID}}
	}
	here, err := a.Visit(context.Background(), plan())
	require.NoError(t, err)
	assert.Empty(t, here.SessionNote)
	assert.Equal(t, v1.SessionID, here.SessionID)
	assert.Contains(t, here.Output["text"], "id=["+v1.SessionID+"]")

	elsewhere, err := newActs(t, store).Visit(context.Background(), plan())
	require.NoError(t, err)
	assert.Contains(t, elsewhere.SessionNote, "not present on this worker")
	assert.NotEqual(t, v1.SessionID, elsewhere.SessionID)
	assert.Contains(t, elsewhere.Output["text"], "id=[]")
}

// A human's answer reaches the conversation that asked; when that
// conversation is gone (no plan could restore it), the fresh one gets it
// in its prompt instead.
func TestVisitAnswerGoesToTheConversationOrThePrompt(t *testing.T) {
	store := blob.NewMem()
	ref := pauseRef(digestsSince.Add(time.Minute), 3)
	a := newActs(t, store)
	asked, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: asker, Backend: "scripted", PauseTo: ref, Started: time.Now()})
	require.NoError(t, err)
	require.True(t, asked.Packed)
	// On the same worker, a plan that keeps the session: the answer goes to it.
	res, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: asker, Backend: "scripted", Started: time.Now(),
		Session: &SessionPlan{Kind: resolve.UnpackPause.String(), SessionID: asked.SessionID, StateRef: ref, Digest: asked.PackDigest},
		Answer:  &agent.Answer{Text: "teal"}})
	require.NoError(t, err)
	assert.Equal(t, "turn 2: painted it teal", res.Output["text"])
	// With no plan at all (nothing to restore), the answer rides the prompt.
	res, err = newActs(t, store).Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: asker, Backend: "scripted", Started: time.Now(),
		Answer: &agent.Answer{Text: "teal"}})
	require.NoError(t, err)
	text, _ := res.Output["text"].(string)
	assert.Contains(t, text, "turn 1: fresh, told")
	assert.Contains(t, text, LostAnswerIntro+"\nteal")
}

// A visit counts as running on its worker only while it runs: once it
// ended, evicting the run removes its live sessions.
func TestVisitEndsItsInflightCount(t *testing.T) {
	a := newActs(t, blob.NewMem())
	_, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: echoWriter, Backend: "scripted", Started: time.Now()})
	require.NoError(t, err)
	require.DirExists(t, filepath.Join(a.StateDir, "runs", "r1"))
	assert.False(t, a.inflight.running("r1"))
	RunForgetter(a)("r1")
	assert.NoDirExists(t, filepath.Join(a.StateDir, "runs", "r1"))
}

// With a workspace manager, a visit snapshots what it changed into the
// store, and the next visit, on a worker that never saw the run, restores
// it before it runs.
func TestVisitCarriesTheWorkspace(t *testing.T) {
	store := blob.NewMem()
	worker := func() *Activities {
		a := newActs(t, store)
		a.Workspaces = workspace.NewManager(filepath.Join(a.StateDir, "workspaces"), store, workspace.Limits{}, nil)
		return a
	}
	tool := func(visit int, ws *runstore.WorkspaceState, script string) *VisitResult {
		res, err := worker().Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "t", Visit: visit, Started: time.Now(), Workspace: ws,
			Node: graph.Node{ID: "t", Kind: graph.KindTool, Run: []string{"sh", "-c", script}}})
		require.NoError(t, err)
		return res
	}
	wrote := tool(1, &runstore.WorkspaceState{}, "echo hello > notes.txt")
	require.NotNil(t, wrote.Workspace, "the visit's change is a new snapshot")
	assert.Equal(t, 1, wrote.Workspace.Files)
	read := tool(2, wrote.Workspace, "cat notes.txt")
	assert.Equal(t, "hello", trimmed(read.Output["stdout"]), "restored on a new worker")
	assert.Nil(t, read.Workspace, "a visit that changed nothing makes no snapshot")
	// A node that asks for .workspace.diff sees what the run changed.
	diff := tool(3, wrote.Workspace, "printf '%s' '{{.workspace.diff}}'")
	assert.Contains(t, diff.Output["stdout"], "+hello")
	assert.Contains(t, diff.Output["stdout"], "notes.txt")
}

// The visits metric tells a visit that asked the user from one that
// ended, and a snapshot's commit says "(asked the user)" only of a visit
// that did.
func TestVisitOutcomeIsCountedAndCommitted(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	m, err := telemetry.NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	require.NoError(t, err)
	store := blob.NewMem()
	a := newActs(t, store)
	a.Metrics = m
	a.Workspaces = workspace.NewManager(filepath.Join(a.StateDir, "workspaces"), store, workspace.Limits{}, nil)
	a.Backends = Backends{writesAFile{a.Backends[0]}}

	asked, err := a.Visit(ctx, &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: asker, Backend: "scripted",
		PauseTo: pauseRef(time.Now(), 1), Started: time.Now(), Workspace: &runstore.WorkspaceState{}})
	require.NoError(t, err)
	require.Len(t, asked.Questions, 1)
	require.NotNil(t, asked.Workspace)
	plain, err := a.Visit(ctx, &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 2, Node: writer, Backend: "scripted",
		Started: time.Now(), Workspace: asked.Workspace})
	require.NoError(t, err)
	require.Empty(t, plain.Questions)
	require.NotNil(t, plain.Workspace)
	tool, err := a.Visit(ctx, &VisitRequest{RunID: "r1", NodeID: "t", Visit: 1, Started: time.Now(), Workspace: plain.Workspace,
		Node: graph.Node{ID: "t", Kind: graph.KindTool, Run: []string{"sh", "-c", "echo hi > notes.txt"}}})
	require.NoError(t, err)
	require.NotNil(t, tool.Workspace)
	_, err = a.Visit(ctx, &VisitRequest{RunID: "r1", NodeID: "t", Visit: 2, Started: time.Now(), Workspace: tool.Workspace,
		Node: graph.Node{ID: "t", Kind: graph.KindTool, Run: []string{"true"}}})
	require.NoError(t, err)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	outcomes := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if sum, ok := mt.Data.(metricdata.Sum[int64]); ok && mt.Name == telemetry.VisitsMetric {
				for _, dp := range sum.DataPoints {
					o, _ := dp.Attributes.Value("outcome")
					outcomes[o.AsString()] += dp.Value
				}
			}
		}
	}
	assert.Equal(t, map[string]int64{telemetry.OutcomeAsked: 1, telemetry.OutcomeOK: 3}, outcomes)

	gitBin, err := exec.LookPath("git")
	if err != nil {
		testenv.Unavailable(t, "git is not installed (apt-get install git)")
	}
	repo := filepath.Join(t.TempDir(), "repo.git")
	require.NoError(t, workspace.History(ctx, store, "r1", tool.Workspace, repo, workspace.Limits{}))
	out, err := exec.Command(gitBin, "--git-dir", repo, "log", "--format=%s").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "t visit 1\nwriter visit 2\nwriter visit 1 (asked the user)", strings.TrimSpace(string(out)))
	// An agent visit's commit names its backend and session; a tool's has neither.
	bodies, err := exec.Command(gitBin, "--git-dir", repo, "log", "--format=%b%x00").CombinedOutput()
	require.NoError(t, err, "%s", bodies)
	b := strings.Split(string(bodies), "\x00")
	require.GreaterOrEqual(t, len(b), 3)
	assert.NotContains(t, b[0], "backend:")
	assert.Contains(t, b[1], "backend: scripted")
	assert.Contains(t, b[2], "session: "+asked.SessionID)
}

// writesAFile is the scripted agent, writing a file of its own into the
// workspace on every visit (as a coding agent would), so that every visit
// makes a snapshot.
type writesAFile struct{ agent.Backend }

func (w writesAFile) Execute(ctx context.Context, req agent.Request) (agent.Result, error) {
	name := filepath.Join(req.Env.Workdir, fmt.Sprintf("by-agent-%d.txt", time.Now().UnixNano()))
	if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
		return agent.Result{}, err
	}
	return w.Backend.Execute(ctx, req)
}

// seesItsEnv is the scripted agent, recording the env each visit ran in.
type seesItsEnv struct {
	agent.Backend
	envs *[]agent.Env
}

func (s seesItsEnv) Execute(ctx context.Context, req agent.Request) (agent.Result, error) {
	*s.envs = append(*s.envs, req.Env)
	return s.Backend.Execute(ctx, req)
}

// An agent visit runs in its run's own state root for its backend and in
// the run's workspace, both made before it starts: two runs on one worker
// never share a root, so a confined agent sees no other run's sessions.
func TestVisitAgentRunsInItsRunsOwnRoots(t *testing.T) {
	a := newActs(t, blob.NewMem())
	var envs []agent.Env
	a.Backends = Backends{seesItsEnv{a.Backends[0], &envs}}
	for _, run := range []string{"r1", "r2"} {
		_, err := a.Visit(context.Background(), &VisitRequest{RunID: run, NodeID: "writer", Visit: 1, Node: writer, Backend: "scripted", Started: time.Now()})
		require.NoError(t, err)
	}
	require.Len(t, envs, 2)
	for i, run := range []string{"r1", "r2"} {
		assert.Equal(t, filepath.Join(a.StateDir, "runs", run, "scripted"), envs[i].StateRoot)
		assert.Equal(t, filepath.Join(a.WorkDir, run), envs[i].Workdir)
		assert.DirExists(t, envs[i].StateRoot)
		assert.DirExists(t, envs[i].Workdir)
	}
}

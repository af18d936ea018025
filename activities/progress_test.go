package activities

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/scripted"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
)

// A visit's output carries its usage under the reserved key.
func TestExecuteOutputCarriesUsage(t *testing.T) {
	a := newActs(t, blob.NewMem())
	res, err := a.ExecuteNode(context.Background(), &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: writer, Backend: "scripted"})
	require.NoError(t, err)
	assert.Equal(t, "turn 1: hello 1", res.Output["text"])
	assert.Equal(t, scripted.Usage("hello 1", "turn 1: hello 1"), res.Output[agent.UsageKey])
}

// stuckBackend reports progress, then runs until released (or 20 s).
type stuckBackend struct {
	progress agent.Progress
	release  chan struct{}
}

func (b *stuckBackend) Name() string                         { return "stuck" }
func (b *stuckBackend) Fingerprint(agent.Request) string     { return "fp" }
func (b *stuckBackend) Packer(agent.Env) agent.SessionPacker { return nil }
func (b *stuckBackend) Execute(ctx context.Context, req agent.Request) (agent.Result, error) {
	req.Progress(b.progress)
	select {
	case <-b.release:
	case <-time.After(20 * time.Second): // the test fails on what it saw
	case <-ctx.Done():
		return agent.Result{}, ctx.Err()
	}
	return agent.Result{SessionID: "s1", Text: "done", Usage: b.progress.Usage}, nil
}

// progressWorkflow runs one ExecuteNode with a heartbeat timeout short
// enough that the SDK sends heartbeats to the listener within seconds.
func progressWorkflow(ctx workflow.Context, req *ExecuteRequest) (*ExecuteResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute, HeartbeatTimeout: 3 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var res ExecuteResult
	err := workflow.ExecuteActivity(ctx, (*Activities).ExecuteNode, req).Get(ctx, &res)
	return &res, err
}

// While the agent runs, the visit's heartbeats carry its latest progress,
// bounded and naming the visit.
func TestHeartbeatsCarryProgress(t *testing.T) {
	stuck := &stuckBackend{release: make(chan struct{}), progress: agent.Progress{
		Activity: "Edit main.go", ToolCalls: 2, Text: strings.Repeat("long reply ", 100),
		Usage: agent.Usage{InputTokens: 12000, OutputTokens: 400},
	}}
	a := newActs(t, blob.NewMem())
	a.Backends = Backends{stuck}

	var (
		mu   sync.Mutex
		seen []agent.Progress
		once sync.Once
	)
	env := (&testsuite.WorkflowTestSuite{}).NewTestWorkflowEnvironment()
	// A busy machine may starve a workflow task past the SDK's 1 s deadlock
	// detector; a real deadlock still fails within the minute.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	// A busy machine may starve a workflow task past the SDK's 1 s deadlock
	// detector; a real deadlock still fails within the minute.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.RegisterActivity(a)
	env.RegisterWorkflow(progressWorkflow)
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var p agent.Progress
		if !details.HasValues() || details.Get(&p) != nil || p.Activity == "" {
			return
		}
		mu.Lock()
		seen = append(seen, p)
		mu.Unlock()
		once.Do(func() { close(stuck.release) })
	})
	node := graph.Node{ID: "writer", Kind: graph.KindAgent, Backend: "stuck", Prompt: "go"}
	env.ExecuteWorkflow(progressWorkflow, &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 3, Node: node, Backend: "stuck"})
	require.NoError(t, env.GetWorkflowError())
	var res ExecuteResult
	require.NoError(t, env.GetWorkflowResult(&res))

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen, "a heartbeat carried the progress before the visit ended")
	p := seen[0]
	assert.Equal(t, "writer", p.Node)
	assert.Equal(t, 3, p.Visit)
	assert.Equal(t, "stuck", p.Backend)
	assert.Equal(t, "Edit main.go", p.Activity)
	assert.Equal(t, 2, p.ToolCalls)
	assert.Equal(t, int64(12400), p.Usage.Tokens())
	assert.LessOrEqual(t, len(p.Text), agent.MaxProgressText, "the reply's tail only")
	assert.NotEmpty(t, res.Output[agent.UsageKey])
}

func TestProgressBoardForgetsEndedAttempts(t *testing.T) {
	var b progressBoard
	b.hold("k")
	assert.Empty(t, b.details("k"), "no details before the visit begins")
	b.hold("k")
	b.begin("k", agent.Progress{Node: "n", Visit: 1, Backend: "x"})
	b.update("k", agent.Progress{Node: "other", Activity: "Bash ls"})
	d := b.details("k")
	require.Len(t, d, 1)
	assert.Equal(t, "n", d[0].(agent.Progress).Node, "the visit's name is the board's, not the executor's")
	assert.Equal(t, "Bash ls", d[0].(agent.Progress).Activity)
	b.release("k")
	assert.Len(t, b.details("k"), 1, "an outer heartbeat loop still runs")
	b.release("k")
	assert.Empty(t, b.m, "nothing is kept once the attempt's heartbeats stop")
}

// What lost attempts did rides on every heartbeat of the next one, before
// its visit begins and after.
func TestProgressBoardCarriesLostAttempts(t *testing.T) {
	var b progressBoard
	lost := &agent.Interruption{Attempts: 1, Started: true, ToolCalls: 2}
	b.carry("k", lost)
	b.hold("k")
	d := b.details("k")
	require.Len(t, d, 1)
	assert.Equal(t, lost, d[0].(agent.Progress).Interrupted)
	assert.Empty(t, d[0].(agent.Progress).Node, "not progress of this attempt: `tether status` leaves it out")
	b.begin("k", agent.Progress{Node: "n", Visit: 1})
	b.update("k", agent.Progress{Activity: "Bash ls"})
	assert.Equal(t, lost, b.details("k")[0].(agent.Progress).Interrupted)
	b.release("k")
	assert.Empty(t, b.m)
}

// A first attempt that ends before its first periodic heartbeat sends
// none: an empty first heartbeat would only cost the visit a round trip
// to the server, and a write there, before it could start.
func TestQuickFirstAttemptSendsNoHeartbeat(t *testing.T) {
	a := newActs(t, blob.NewMem())
	a.HeartbeatEvery = time.Minute
	beats := 0
	env := (&testsuite.WorkflowTestSuite{}).NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.RegisterActivity(a)
	env.RegisterWorkflow(progressWorkflow)
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats++ })
	env.ExecuteWorkflow(progressWorkflow, &ExecuteRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: writer, Backend: "scripted"})
	require.NoError(t, env.GetWorkflowError())
	assert.Zero(t, beats, "no heartbeat before the first tick")
}

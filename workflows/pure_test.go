package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// The small pure helpers of the workflow, at their edges: what a user
// reads (ordinals, summaries, cut values) and what bounds a checkpoint.

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{
		1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 10: "10th", 11: "11th", 12: "12th", 13: "13th", 14: "14th",
		21: "21st", 22: "22nd", 23: "23rd", 101: "101st", 111: "111th", 112: "112th", 113: "113th", 110: "110th", 114: "114th",
	} {
		assert.Equal(t, want, ordinal(n), "%d", n)
	}
}

// brief shows a node's output in an error: its own keys, each value cut
// at 80 bytes, never a reserved key.
func TestBrief(t *testing.T) {
	assert.Equal(t, `{a="1", b="x"}`, brief(map[string]any{"b": "x", "a": 1, "_session_id": "s"}))
	at := strings.Repeat("y", 80)
	assert.Equal(t, fmt.Sprintf("{v=%q}", at), brief(map[string]any{"v": at}))
	assert.Equal(t, fmt.Sprintf("{v=%q}", at+"…"), brief(map[string]any{"v": at + "y"}))
}

// A query shows a value of up to maxQueryValue bytes whole, cuts a longer
// one and says how long it was, and never shows a transient key.
func TestQueryValue(t *testing.T) {
	at := strings.Repeat("q", maxQueryValue)
	got := queryValue(map[string]any{"at": at, "over": at + "q", "n": 3, agent.SessionStateBlobKey: "b", agent.SessionStateKey: "s"})
	assert.Equal(t, at, got["at"])
	assert.Equal(t, at+fmt.Sprintf("… (%d bytes)", maxQueryValue+1), got["over"])
	assert.Equal(t, 3, got["n"])
	assert.NotContains(t, got, agent.SessionStateBlobKey)
	assert.NotContains(t, got, agent.SessionStateKey)
}

// The checkpoint keeps the last maxPathSteps steps and counts them all.
func TestPathKeepsTheLastSteps(t *testing.T) {
	r := &runImpl{cp: &runstore.Checkpoint{}}
	for i := range maxPathSteps {
		r.addStep(runstore.Step{Node: "n", Visit: i + 1})
	}
	require.Len(t, r.cp.Path, maxPathSteps)
	assert.Equal(t, 1, r.cp.Path[0].Visit)
	r.addStep(runstore.Step{Node: "n", Visit: maxPathSteps + 1})
	require.Len(t, r.cp.Path, maxPathSteps)
	assert.Equal(t, 2, r.cp.Path[0].Visit)
	assert.Equal(t, maxPathSteps+1, r.cp.Path[maxPathSteps-1].Visit)
	assert.Equal(t, maxPathSteps+1, r.cp.PathTotal)
}

// A node keeps its last maxLoopSnapshots earlier outputs; other nodes'
// snapshots stay, in order.
func TestLoopSnapshotsKeepTheLastOfEachNode(t *testing.T) {
	r := &runImpl{cp: &runstore.Checkpoint{Outputs: map[string]map[string]any{}}}
	r.setOutput("other", 1, map[string]any{"text": "o1"})
	r.setOutput("other", 2, map[string]any{"text": "o2"})
	for v := 1; v <= maxLoopSnapshots+2; v++ {
		r.setOutput("n", v, map[string]any{"text": fmt.Sprint(v), agent.SessionStateBlobKey: "x", "_session_state_ref": "runs/r/sessions/n/01J"})
	}
	var mine []int
	for i, s := range r.cp.LoopSnapshots {
		if s.Node == "n" {
			mine = append(mine, s.Visit)
			assert.NotContains(t, s.Output, agent.SessionStateBlobKey)
		} else {
			assert.Equal(t, 0, i, "the other node's snapshot keeps its place")
			assert.Equal(t, "o1", s.Output["text"])
		}
	}
	var want []int
	for v := 2; v <= maxLoopSnapshots+1; v++ {
		want = append(want, v)
	}
	assert.Equal(t, want, mine)
	out := r.cp.Outputs["n"]
	assert.Equal(t, fmt.Sprint(maxLoopSnapshots+2), out["text"])
	assert.NotContains(t, out, agent.SessionStateBlobKey)
	assert.NotContains(t, out, "_session_state_ref")
}

// A budget is spent only once usage goes over it; equal is within it.
func TestBudgetIsSpentOnlyPastItsLimit(t *testing.T) {
	cp := func(run, node *graph.Budget, tokens int64, cost float64) *runstore.Checkpoint {
		cp := &runstore.Checkpoint{Usage: map[string]agent.Usage{"w": {InputTokens: tokens - 1, OutputTokens: 1, CostUSD: cost}}}
		require.NoError(t, runapi.SetGraph(cp, &graph.Graph{Budget: run, Nodes: []graph.Node{{ID: "a"}, {ID: "w", Budget: node}}}))
		return cp
	}
	assert.Empty(t, OverBudget(cp(&graph.Budget{MaxTokens: 100}, nil, 100, 0)))
	assert.Equal(t, "the run's budget is spent: 101 tokens used, max_tokens is 100", OverBudget(cp(&graph.Budget{MaxTokens: 100}, nil, 101, 0)))
	assert.Empty(t, OverBudget(cp(&graph.Budget{MaxCostUSD: 0.5}, nil, 1, 0.5)))
	assert.Equal(t, "the run's budget is spent: $0.5100 used, max_cost_usd is $0.50", OverBudget(cp(&graph.Budget{MaxCostUSD: 0.5}, nil, 1, 0.51)))
	assert.Empty(t, OverBudget(cp(nil, &graph.Budget{MaxTokens: 10}, 10, 0)))
	assert.Equal(t, "the budget of node w is spent: 11 tokens used, max_tokens is 10", OverBudget(cp(nil, &graph.Budget{MaxTokens: 10}, 11, 0)))
	assert.Empty(t, OverBudget(cp(&graph.Budget{}, &graph.Budget{}, 1e6, 1e6)), "a zero limit is no limit")
	// The run's sum is every node's.
	two := cp(&graph.Budget{MaxTokens: 150}, nil, 100, 0)
	two.Usage["a"] = agent.Usage{InputTokens: 51}
	assert.Contains(t, OverBudget(two), "151 tokens used")
}

func TestDeleteSummary(t *testing.T) {
	assert.Equal(t, "delete superseded blob k1", deleteSummary([]string{"k1"}))
	assert.Equal(t, "delete 2 superseded blobs (k1, …)", deleteSummary([]string{"k1", "k2"}))

	// Since changeRefFreeNotes: whose blobs, never a key.
	const id = "01J00000000000000000000BEN"
	keys := []string{runstore.SessionKey("r1", "writer", id), runstore.PauseKey("r1", "writer", id), runstore.SessionKey("r1", "judge", id), "not-a-key"}
	assert.Equal(t, "delete 4 superseded blobs of writer, judge", deleteSummaryOfNodes("r1", keys))
	assert.Equal(t, "delete a superseded blob of writer", deleteSummaryOfNodes("r1", keys[:1]))
	assert.Equal(t, "delete a superseded blob", deleteSummaryOfNodes("r1", []string{runstore.SessionKey("r2", "writer", id)}), "another run's key names nothing")
	for _, k := range keys {
		assert.NotContains(t, deleteSummaryOfNodes("r1", keys), k)
	}
}

// A progress save counts only finished visits: one visit of each node in
// flight is taken off, and a node at none is dropped; the run's own
// counts are left alone.
func TestFinishedVisits(t *testing.T) {
	visits := map[string]int{"a": 3, "b": 1, "c": 2}
	assert.Equal(t, map[string]int{"a": 2, "c": 2}, finishedVisits(visits, []string{"a", "b"}))
	assert.Equal(t, map[string]int{"a": 3, "b": 1, "c": 2}, visits)
}

// The checkpoint a save writes shares no memory with the run's: branches
// going on during the save change their records and maps in place, and
// the save must write the run as it stood. Numbers keep their digits.
func TestSavedCheckpointIsDetached(t *testing.T) {
	next := &runstore.Cursor{Node: "l2"}
	run := runstore.Checkpoint{
		RunID:    "r",
		Visits:   map[string]int{"l1": 1},
		Outputs:  map[string]map[string]any{"l1": {"n": int64(1) << 60, "s": "x"}},
		Branches: []runstore.BranchState{{Name: "l", Next: next, Nodes: []string{"l1"}}},
		Pause:    &runstore.PauseInfo{NodeID: "h", Questions: []runstore.Question{{ID: "q"}}},
		Guidance: []runstore.Guidance{{Node: "a", Text: "one"}, {Node: "a", Text: "two"}},
		PathLost: 3,
	}
	saved, err := detached(run)
	require.NoError(t, err)
	run.Visits["l2"] = 1
	run.Outputs["l1"]["s"] = "changed"
	run.Branches[0].Next.Node = "meet"
	run.Branches[0].Nodes[0] = "other"
	run.Pause.Questions[0].Answered = true
	run.Guidance[0] = run.Guidance[1]
	assert.Equal(t, map[string]int{"l1": 1}, saved.Visits)
	assert.Equal(t, "x", saved.Outputs["l1"]["s"])
	assert.Equal(t, "l2", saved.Branches[0].Next.Node)
	assert.Equal(t, []string{"l1"}, saved.Branches[0].Nodes)
	assert.False(t, saved.Pause.Questions[0].Answered)
	assert.Equal(t, "one", saved.Guidance[0].Text)
	assert.Equal(t, 3, saved.PathLost)
	b, err := json.Marshal(saved.Outputs["l1"]["n"])
	require.NoError(t, err)
	assert.Equal(t, "1152921504606846976", string(b), "a big integer keeps its digits")
}

// The state a checkpoint alone gives: its cursor as the current nodes,
// sessions without refs, the open branches and unanswered questions.
func TestStateOf(t *testing.T) {
	ws := &runstore.WorkspaceState{Commit: "c1", Files: 2, Bytes: 3, Commits: 4, Notes: []string{"n"}}
	cp := &runstore.Checkpoint{
		RunID: "r", Graph: json.RawMessage(`{"name":"g"}`), Status: runstore.StatusWaiting, Seq: 7, PathTotal: 9,
		Cursor:       []runstore.Cursor{{Node: "x"}, {Node: "y"}},
		Visits:       map[string]int{"x": 1},
		Outputs:      map[string]map[string]any{"x": {"text": "t"}},
		NodeSessions: map[string]runstore.NodeSessionSlot{"w": {Backend: "claude_code", SessionID: "s", StateRef: "runs/r/sessions/w/01J"}},
		Workspace:    ws,
		Branches:     []runstore.BranchState{{Name: "b1", Join: "j", Workspace: &runstore.WorkspaceState{Commit: "c2"}, Next: &runstore.Cursor{Node: "z"}}, {Name: "b2"}},
		Usage:        map[string]agent.Usage{"w": {InputTokens: 5}},
		Pause: &runstore.PauseInfo{NodeID: "h", Questions: []runstore.Question{
			{ID: "q1", Text: "one", Answered: true}, {ID: "q2", Text: "two"},
		}},
	}
	st := StateOf(cp)
	assert.Equal(t, []string{"x", "y"}, st.Current)
	assert.Equal(t, map[string]runapi.SessionView{"w": {Backend: "claude_code", SessionID: "s"}}, st.Sessions)
	assert.NotContains(t, mustJSON(st), "runs/r/sessions")
	assert.Equal(t, &runapi.WorkspaceView{Commit: "c1", Files: 2, Bytes: 3, Snapshots: 4, Notes: []string{"n"},
		Branches: []runapi.BranchView{{Name: "b1", Commit: "c2", Next: "z", Join: "j"}, {Name: "b2"}}}, st.Workspace)
	assert.Equal(t, []runapi.PendingQuestion{{ID: "q2", Node: "h", Text: "two"}}, st.Questions)
	assert.Equal(t, int64(5), st.TotalUsage.Tokens())
	assert.Equal(t, 9, st.Steps)
	assert.Equal(t, int64(7), st.Checkpoint)
	assert.Equal(t, "g", st.Graph)
}

// BenchmarkDetachedCheckpoint: what giving the save its own copy of a
// large checkpoint costs the workflow (a full path of 200 steps, 20
// nodes with 4 KB outputs and loop snapshots), beside the encoding the
// save does anyway.
func BenchmarkDetachedCheckpoint(b *testing.B) {
	cp := runstore.Checkpoint{RunID: "bench", Seq: 9, Status: runstore.StatusRunning,
		Outputs: map[string]map[string]any{}, Visits: map[string]int{}, Usage: map[string]agent.Usage{}}
	g := graph.Graph{Name: "g"}
	for i := range 20 {
		n := fmt.Sprintf("node-%d", i)
		g.Nodes = append(g.Nodes, graph.Node{ID: n, Kind: graph.KindAgent, Backend: "claude_code", Prompt: strings.Repeat("p", 400)})
		cp.Outputs[n] = map[string]any{"text": strings.Repeat("o", 4096), "exit_code": 0, "_visit": i}
		cp.Visits[n] = 10
		cp.Usage[n] = agent.Usage{InputTokens: 12345, OutputTokens: 678}
		cp.LoopSnapshots = append(cp.LoopSnapshots, runstore.LoopSnapshot{Node: n, Visit: 9, Output: map[string]any{"text": strings.Repeat("s", 4096)}})
	}
	for i := range maxPathSteps {
		cp.Path = append(cp.Path, runstore.Step{Node: fmt.Sprintf("node-%d", i%20), Visit: i / 20, Status: "ok", StartedAt: "2026-12-03T10:00:00Z", DurationMS: 1234, Detail: strings.Repeat("d", 200), Outcome: runstore.OutcomeOK})
	}
	cp.PathTotal = 10 * maxPathSteps
	require.NoError(b, runapi.SetGraph(&cp, &g))
	size, err := json.Marshal(&cp)
	require.NoError(b, err)
	b.Run("detached", func(b *testing.B) {
		b.SetBytes(int64(len(size)))
		for b.Loop() {
			if _, err := detached(cp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-only", func(b *testing.B) {
		b.SetBytes(int64(len(size)))
		for b.Loop() {
			if _, err := json.Marshal(&cp); err != nil {
				b.Fatal(err)
			}
		}
	})
}

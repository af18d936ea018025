package runapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// OptionsOf are the options of node, when it is a human node.
func OptionsOf(g *graph.Graph, node string) []string {
	if n, ok := g.Node(node); ok && n.Kind == graph.KindHuman {
		return n.Options
	}
	return nil
}

// GraphOf is the graph cp's run executes, read from the JSON the
// checkpoint keeps of it; a graph that does not read is an
// ErrInvalidCheckpoint. The workflow reads it too: encoding/json reads the
// same bytes to the same graph on every replay; workflowcheck only sees
// reflection.
//
//workflowcheck:ignore
func GraphOf(cp *runstore.Checkpoint) (*graph.Graph, error) {
	g, err := graph.FromJSON(cp.Graph)
	if err != nil {
		return nil, fmt.Errorf("%w: run %q checkpoint %d: %v", runstore.ErrInvalidCheckpoint, cp.RunID, cp.Seq, err)
	}
	return g, nil
}

// SetGraph makes g the graph cp's run executes: its JSON, as the
// checkpoint keeps it. encoding/json writes struct fields in order and
// map keys sorted, so the workflow writes the same bytes on every
// replay; workflowcheck only sees reflection.
//
//workflowcheck:ignore
func SetGraph(cp *runstore.Checkpoint, g *graph.Graph) error {
	b, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("graph %q: %w", g.Name, err)
	}
	cp.Graph = b
	return nil
}

// GraphOrEmpty is GraphOf, or the empty graph when it does not read: a
// state, a page or a budget check shows what the rest of the checkpoint
// says (the workflow refuses such a graph when it starts, and a signed
// checkpoint holds the graph its run was started with).
func GraphOrEmpty(cp *runstore.Checkpoint) *graph.Graph {
	g, err := GraphOf(cp)
	if err != nil {
		return &graph.Graph{}
	}
	return g
}

// StateOf is what a checkpoint alone says about a run, in the shape of the
// state query: `tether status` answers with it when no worker is up, and
// the live query starts from it. Sessions appear without their state refs.
func StateOf(cp *runstore.Checkpoint) *State {
	g := GraphOrEmpty(cp)
	s := &State{
		RunID:      cp.RunID,
		Graph:      g.Name,
		Status:     cp.Status,
		Visits:     maps.Clone(cp.Visits),
		Outputs:    map[string]map[string]any{},
		Path:       slices.Clone(cp.Path),
		Steps:      cp.PathTotal,
		Error:      cp.Error,
		Checkpoint: cp.Seq,
		Guidance:   slices.Clone(cp.Guidance),
		GraphEdits: slices.Clone(cp.GraphEdits),
	}
	for _, c := range cp.Cursor {
		s.Current = append(s.Current, c.Node)
	}
	if ws := cp.Workspace; ws != nil {
		s.Workspace = &WorkspaceView{Commit: ws.Commit, Files: ws.Files, Bytes: ws.Bytes, Snapshots: ws.Commits, Notes: slices.Clone(ws.Notes)}
		for _, b := range cp.Branches {
			v := BranchView{Name: b.Name, Join: b.Join}
			if b.Workspace != nil {
				v.Commit = b.Workspace.Commit
			}
			if b.Next != nil {
				v.Next = b.Next.Node
			}
			s.Workspace.Branches = append(s.Workspace.Branches, v)
		}
	}
	if len(cp.Usage) > 0 {
		s.Usage = maps.Clone(cp.Usage)
		s.TotalUsage = RunUsage(cp)
	}
	for _, id := range workflow.DeterministicKeys(cp.Outputs) {
		s.Outputs[id] = cp.Outputs[id]
	}
	for _, id := range workflow.DeterministicKeys(cp.NodeSessions) {
		slot := cp.NodeSessions[id]
		if s.Sessions == nil {
			s.Sessions = map[string]SessionView{}
		}
		s.Sessions[id] = SessionView{Backend: slot.Backend, SessionID: slot.SessionID}
	}
	if p := cp.Pause; p != nil {
		for _, q := range p.Questions {
			if !q.Answered {
				s.Questions = append(s.Questions, PendingQuestion{ID: q.ID, Node: p.NodeID, Text: q.Text, AllowEmpty: q.AllowEmpty, Options: OptionsOf(g, p.NodeID), Asking: q.Notice})
			}
		}
	}
	return s
}

// RunUsage is what the whole run has cost so far.
func RunUsage(cp *runstore.Checkpoint) agent.Usage {
	var total agent.Usage
	for _, k := range workflow.DeterministicKeys(cp.Usage) {
		total = total.Add(cp.Usage[k])
	}
	return total
}

// OverBudget says which budget of cp's graph (the run's, or a node's) its
// spending crossed, or "" when none is spent: a run resumed in that state
// stops again before its next visit.
func OverBudget(cp *runstore.Checkpoint) string {
	g := GraphOrEmpty(cp)
	if msg := agent.Spent(limit(RunBudgetName, g.Budget, RunUsage(cp)), agent.Usage{}); msg != "" {
		return msg
	}
	for _, n := range g.Nodes {
		if msg := agent.Spent(limit(NodeBudgetName(n.ID), n.Budget, cp.Usage[n.ID]), agent.Usage{}); msg != "" {
			return msg
		}
	}
	return ""
}

// RunBudgetName names the run's budget in messages; NodeBudgetName a
// node's.
const RunBudgetName = "the run's budget"

// NodeBudgetName names node's budget in messages.
func NodeBudgetName(node string) string { return "the budget of node " + node }

// Limits are the budgets a visit of node counts against, the run's first,
// each with what it had counted when cp was taken: what the worker's
// model relay refuses the visit's model calls by once one is spent.
func Limits(cp *runstore.Checkpoint, node string) []agent.Limit {
	g := GraphOrEmpty(cp)
	out := limit(RunBudgetName, g.Budget, RunUsage(cp))
	if n, ok := g.Node(node); ok {
		out = append(out, limit(NodeBudgetName(node), n.Budget, cp.Usage[node])...)
	}
	return out
}

// limit is budget b as a Limit named what that has spent u, or none.
func limit(what string, b *graph.Budget, u agent.Usage) []agent.Limit {
	if b == nil || b.MaxTokens <= 0 && b.MaxCostUSD <= 0 {
		return nil
	}
	return []agent.Limit{{Name: what, MaxTokens: b.MaxTokens, MaxCostUSD: b.MaxCostUSD, Spent: u}}
}

// CheckGuide says why a note cannot go to node of g ("" when it can): the
// workflow ignores such a signal, so `tether guide` asks first.
func CheckGuide(g *graph.Graph, gd Guide) error {
	n, ok := g.Node(gd.Node)
	switch {
	case strings.TrimSpace(gd.Text) == "":
		return fmt.Errorf("the note is empty; write what node %s should do", gd.Node)
	case !ok:
		return fmt.Errorf("graph %q has no node %q", g.Name, gd.Node)
	case n.Kind != graph.KindAgent:
		return fmt.Errorf("node %q is a %s node; only agent nodes read guidance", gd.Node, n.Kind)
	}
	return nil
}

// StopError is err as a resumable stop of a run (a fail-stop or a budget
// stop), whose details carry the checkpoint to resume from.
func StopError(err error) (*temporal.ApplicationError, bool) {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && (appErr.Type() == ErrTypeResumable || appErr.Type() == ErrTypeBudget) {
		return appErr, true
	}
	return nil, false
}

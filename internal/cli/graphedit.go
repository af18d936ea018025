package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// A run that failed on a mistake in its graph (an edge's condition, a
// mapping, a tool's command) is fixed and continued: `tether resume RUN
// --graph FILE` (rewind and fork take --graph too) goes on from the
// checkpoint with the corrected graph. The graph is validated as `tether
// run` validates it, and checked against the checkpoint: every node the
// checkpoint still needs (the cursor, a question waiting, a persist
// node's conversation, an open fan-out branch, the visit whose edges
// failed) must be in it, of the same kind, and a conversation's node on
// the same backend with session: persist. The change is recorded in the
// checkpoint (GraphEdits), which the new execution's input carries into
// Temporal's history, and the console shows it.

// graphFix is what --graph and --rerun ask of a command that continues a
// run.
type graphFix struct {
	// path is the corrected graph file; "" keeps the run's graph.
	path string
	// rerun runs the visit whose edges failed again, even when the
	// corrected graph did not change its node.
	rerun bool
}

// apply puts the corrected graph into cp (the checkpoint a run goes on
// from, by via: resume, rewind or fork), after checking it, and records
// the edit; sameName requires the graph's name to stay (a run keeps its
// graph's name; a fork may take another). It also decides whether the
// visit whose edges failed runs again. With no --graph, only --rerun
// applies.
func (a *app) applyGraphFix(fix graphFix, cp *runstore.Checkpoint, via string, sameName bool) error {
	if fix.path == "" {
		if fix.rerun {
			if cp.Ended == nil {
				return usageErr("--rerun: checkpoint %d has no visit whose edges failed; nothing to run again", cp.Seq)
			}
			cp.Ended = nil
		}
		return nil
	}
	g, err := a.loadGraph(fix.path)
	if err != nil {
		return err
	}
	old, err := runapi.GraphOf(cp)
	if err != nil {
		return failedErr(err)
	}
	if sameName && g.Name != old.Name {
		return usageErr("%s: the graph is named %q, the run's %q: a corrected graph keeps its name (fork the run to run another graph: tether fork RUN --graph FILE)", fix.path, g.Name, old.Name)
	}
	if err := compatible(old, g, cp); err != nil {
		return usageErr("%s cannot take over run %s at checkpoint %d: %v", fix.path, cp.RunID, cp.Seq, err)
	}
	if missing := missingInputs(g, cp.Inputs); len(missing) > 0 {
		return usageErr("%s requires input(s) %s that run %s was not given; give them defaults in the graph", fix.path, strings.Join(missing, ", "), cp.RunID)
	}
	edit := runstore.GraphEdit{Seq: cp.Seq, Via: via, File: fix.path, Changes: graphChanges(old, g), At: time.Now().UTC().Format(time.RFC3339), By: osUser()}
	if len(edit.Changes) == 0 {
		edit.Changes = []string{"no change"}
	}
	b, err := graph.Encode(g)
	if err != nil {
		return failedErr(err)
	}
	sum := sha256.Sum256(b)
	edit.Digest = hex.EncodeToString(sum[:])
	if e := cp.Ended; e != nil {
		was, _ := old.Node(e.Node)
		now, _ := g.Node(e.Node)
		if fix.rerun || !sameNode(was, now) {
			edit.Rerun = e.Node
			cp.Ended = nil
		}
	}
	if err := runapi.SetGraph(cp, g); err != nil {
		return failedErr(err)
	}
	cp.GraphEdits = append(slices.Clone(cp.GraphEdits), edit)
	return nil
}

// compatible says why g cannot take over from cp (whose graph is old):
// a node cp still needs is gone, or is now another kind of node, or a
// conversation cp holds could no longer be continued by its node.
func compatible(old, g *graph.Graph, cp *runstore.Checkpoint) error {
	need := map[string]string{} // node -> why cp needs it (the first reason)
	add := func(node, why string) {
		if _, ok := need[node]; !ok {
			need[node] = why
		}
	}
	for _, c := range cp.Cursor {
		add(c.Node, "the run goes on from it")
	}
	for _, b := range cp.Branches {
		if b.Next != nil {
			add(b.Next.Node, "fan-out branch "+b.Name+" goes on from it")
		}
	}
	if cp.Pause != nil {
		add(cp.Pause.NodeID, "its question waits")
	}
	if cp.Ended != nil {
		add(cp.Ended.Node, "its visit ended before the edges failed")
	}
	for _, n := range slices.Sorted(maps.Keys(cp.NodeSessions)) {
		add(n, "it holds a conversation")
	}
	for _, gd := range cp.Guidance {
		add(gd.Node, "a note waits for it")
	}
	var problems []string
	for _, id := range slices.Sorted(maps.Keys(need)) {
		was, _ := old.Node(id)
		now, ok := g.Node(id)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("node %q is gone, but %s", id, need[id]))
		case was != nil && was.Kind != now.Kind:
			problems = append(problems, fmt.Sprintf("node %q is a %s node now, a %s node before (%s)", id, now.Kind, was.Kind, need[id]))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(cp.NodeSessions)) {
		slot := cp.NodeSessions[id]
		now, ok := g.Node(id)
		if !ok {
			continue
		}
		if now.Session != graph.SessionPersist {
			problems = append(problems, fmt.Sprintf("node %q holds a conversation, but its session is %s now, not persist", id, now.Session))
		} else if slot.Backend != "" && now.Backend != slot.Backend {
			problems = append(problems, fmt.Sprintf("node %q holds a %s conversation, but runs on %s now", id, slot.Backend, now.Backend))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// missingInputs are the inputs g requires that given (a run's) lacks.
func missingInputs(g *graph.Graph, given map[string]any) []string {
	have := g.WithDefaults(given)
	var out []string
	for _, in := range g.Inputs {
		if _, ok := have[in.Name]; !ok && in.Required {
			out = append(out, in.Name)
		}
	}
	return out
}

// sameNode says two definitions of a node are the same.
func sameNode(a, b *graph.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	return reflect.DeepEqual(jsonOf(a), jsonOf(b))
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// graphChanges lists what g changes of old, in words: nodes added,
// removed or changed, edges added or removed, and the rest.
func graphChanges(old, g *graph.Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		was, ok := old.Node(n.ID)
		switch {
		case !ok:
			out = append(out, "node "+n.ID+" added")
		case !sameNode(was, &n):
			out = append(out, "node "+n.ID+" changed")
		}
	}
	for _, n := range old.Nodes {
		if _, ok := g.Node(n.ID); !ok {
			out = append(out, "node "+n.ID+" removed")
		}
	}
	edge := func(e graph.Edge) string {
		s := e.From + " → " + e.To
		if e.When != "" {
			s += " when " + e.When
		}
		return s
	}
	oldEdges, newEdges := map[string]bool{}, map[string]bool{}
	for _, e := range old.Edges {
		oldEdges[jsonOf(e)] = true
	}
	for _, e := range g.Edges {
		newEdges[jsonOf(e)] = true
		if !oldEdges[jsonOf(e)] {
			out = append(out, "edge "+edge(e)+" added")
		}
	}
	for _, e := range old.Edges {
		if !newEdges[jsonOf(e)] {
			out = append(out, "edge "+edge(e)+" removed")
		}
	}
	rest := func(x *graph.Graph) string {
		c := *x
		c.Nodes, c.Edges = nil, nil
		return jsonOf(c)
	}
	if rest(old) != rest(g) {
		out = append(out, "the graph's own settings changed")
	}
	return out
}

package graph

import (
	"maps"
	"slices"
	"strings"
)

// checkFlow checks the shape of the graph: every node reachable from start,
// an end reachable from every node, and fan-outs that meet at joins.
func (v *validator) checkFlow() {
	succ := v.successors()
	_, startOK := v.index[v.g.Start]

	reached := map[string]bool{}
	if startOK {
		reached = reachable([]string{v.g.Start}, succ)
		for _, id := range v.ids {
			if !reached[id] {
				i := v.index[id]
				v.add(CodeUnreachable, v.nodePos(i), id, "node %s cannot be reached from start %s; add an edge into it, or remove it", id, v.g.Start)
			}
		}
	}

	var ends []string
	for _, id := range v.ids {
		if v.g.Nodes[v.index[id]].Kind == KindEnd {
			ends = append(ends, id)
		}
	}
	if len(ends) == 0 {
		if len(v.ids) > 0 {
			v.add(CodeNoEnd, v.at("nodes", ""), "", "the graph has no end node, so no run can finish; add a node with kind: end and an edge into it")
		}
	} else {
		pred := map[string][]string{}
		for _, from := range v.ids {
			for _, to := range succ[from] {
				pred[to] = append(pred[to], from)
			}
		}
		toEnd := reachable(ends, pred)
		for _, id := range v.ids {
			if toEnd[id] || (startOK && !reached[id]) {
				continue // an unreachable node was reported already
			}
			v.add(CodeNoPathToEnd, v.nodePos(v.index[id]), id, "no path leads from node %s to an end node, so a run that gets there can never finish; add an edge out of it toward an end", id)
		}
	}

	if startOK {
		v.checkFanout(succ)
	}
}

// successors maps each node id to the distinct ids its edges enter, in edge
// order, ignoring edges with an unknown end (reported elsewhere).
func (v *validator) successors() map[string][]string {
	succ := map[string][]string{}
	for _, e := range v.g.Edges {
		_, okFrom := v.index[e.From]
		_, okTo := v.index[e.To]
		if okFrom && okTo && !slices.Contains(succ[e.From], e.To) {
			succ[e.From] = append(succ[e.From], e.To)
		}
	}
	return succ
}

func reachable(from []string, next map[string][]string) map[string]bool {
	seen := map[string]bool{}
	queue := append([]string(nil), from...)
	for _, f := range from {
		seen[f] = true
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, m := range next[n] {
			if !seen[m] {
				seen[m] = true
				queue = append(queue, m)
			}
		}
	}
	return seen
}

// flowState is a node reached with the fan-outs still open on the way
// there, innermost last.
type flowState struct {
	node   string
	open   []string
	parent int // index into the visited states, -1 for start
}

func (s flowState) key() string { return s.node + "\x00" + strings.Join(s.open, "\x00") }

// checkFanout follows every path from start, tracking which fan-outs are
// open: a node with fanout: all opens one for the nodes after it, and a join
// closes the innermost. A node reached with a fan-out open is inside a
// branch. That finds persist nodes in branches, joins that no fan-out
// feeds, and branches that end without meeting at a join.
func (v *validator) checkFanout(succ map[string][]string) {
	fanouts := 0
	for _, id := range v.ids {
		if v.g.Nodes[v.index[id]].Fanout == FanoutAll {
			fanouts++
		}
	}
	// A loop around a fan-out without a join would open fan-outs forever;
	// more open than there are fan-out nodes means one is open twice, and
	// following it further finds nothing new.
	maxOpen := fanouts + 1
	const maxStates = 100_000

	states := []flowState{{node: v.g.Start, parent: -1}}
	seen := map[string]bool{states[0].key(): true}
	reported := map[string]bool{}  // code + node, so each is said once
	joins := map[string][]string{} // fan-out node -> the joins its branches reach

	for i := 0; i < len(states) && len(states) < maxStates; i++ {
		s := states[i]
		n := &v.g.Nodes[v.index[s.node]]
		after := s.open
		switch {
		case n.Kind == KindJoin && len(s.open) == 0:
			if !reported[CodeJoinWithoutFanout+s.node] {
				reported[CodeJoinWithoutFanout+s.node] = true
				v.add(CodeJoinWithoutFanout, v.nodePos(v.index[s.node]), s.node, "join node %s is reached along %s with no fan-out open, so it would wait for branches that never started; give a node before it fanout: all, or make %s an ordinary node", s.node, v.path(states, i), s.node)
			}
		case n.Kind == KindJoin:
			after = s.open[:len(s.open)-1]
			fan := s.open[len(s.open)-1]
			if !slices.Contains(joins[fan], s.node) {
				joins[fan] = append(joins[fan], s.node)
			}
		case len(s.open) > 0:
			fan := s.open[len(s.open)-1]
			if n.Kind == KindAgent && n.Session == SessionPersist && !reported[CodePersistInBranch+s.node] {
				reported[CodePersistInBranch+s.node] = true
				v.add(CodePersistInBranch, v.at(nodePath(v.index[s.node])+".session", nodePath(v.index[s.node])), s.node, "node %s uses session: persist inside a fan-out branch of %s (along %s); branches run concurrently, so one persisted conversation could be resumed twice at once. Use session: fresh or fork here, or move the node after the join", s.node, fan, v.path(states, i))
			}
			if n.Kind == KindReview && !reported[CodeReviewInBranch+s.node] {
				reported[CodeReviewInBranch+s.node] = true
				v.add(CodeReviewInBranch, v.nodePos(v.index[s.node]), s.node, "review node %s sits inside a fan-out branch of %s (along %s); a run has one pull request, which only the trunk's files can fill, so move the review after the join", s.node, fan, v.path(states, i))
			}
			if n.Kind == KindEnd && !reported[CodeBranchNoJoin+s.node] {
				reported[CodeBranchNoJoin+s.node] = true
				v.add(CodeBranchNoJoin, v.nodePos(v.index[s.node]), s.node, "a branch of fan-out node %s reaches end node %s without meeting at a join (along %s); lead every branch into a join node, and go to the end after it", fan, s.node, v.path(states, i))
			}
		}
		if n.Kind == KindEnd {
			continue // a run stops here; edges out of an end are reported apart
		}
		next := after
		if n.Fanout == FanoutAll {
			next = append(slices.Clone(after), s.node)
		}
		if len(next) > maxOpen {
			continue
		}
		for _, to := range succ[s.node] {
			ns := flowState{node: to, open: next, parent: i}
			if k := ns.key(); !seen[k] {
				seen[k] = true
				states = append(states, ns)
			}
		}
	}

	for _, id := range v.ids {
		if js := joins[id]; len(js) > 1 {
			v.add(CodeJoinsDiffer, v.nodePos(v.index[id]), id, "the branches of fan-out node %s meet at different joins (%s); a fan-out waits for all its branches at one join, so lead every branch into the same join", id, strings.Join(js, ", "))
		}
	}
}

// path spells the route to states[i] from start, eliding the middle of a
// long one.
func (v *validator) path(states []flowState, i int) string {
	var ids []string
	for ; i >= 0; i = states[i].parent {
		ids = append(ids, states[i].node)
	}
	slices.Reverse(ids)
	if len(ids) > 8 {
		ids = append(append(ids[:3:3], "..."), ids[len(ids)-4:]...)
	}
	return strings.Join(ids, " -> ")
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

package workflows

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// fanout runs each cursor as a concurrent branch until it reaches a join
// node, then returns the join's cursor, whose input maps each branch's last
// node to its output and says what the join did with the branches' files
// (its "workspace" key). parent is the branch a nested fan-out opens in;
// nil for one on the trunk.
//
// Since changeBranchWorkspaces, each branch works on its own line of the
// run's workspace history, starting at the trunk's (or parent branch's)
// commit at the fan-out; the join node's workspace setting says which
// files continue after it. Runs recorded before keep fanoutShared.
func (r *runImpl) fanout(ctx workflow.Context, starts []runstore.Cursor, parent *scope) (runstore.Cursor, error) {
	trunk := r.cp.Workspace
	if parent != nil {
		trunk = parent.ws
	}
	if (parent != nil && parent.name == "") || trunk == nil || !r.oneTripVisits(ctx) ||
		!r.at(ctx, changeBranchWorkspaces, versionBranchWorkspaces) {
		return r.fanoutShared(ctx, starts)
	}
	if len(starts) > graph.MaxBranches {
		return runstore.Cursor{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("a fan-out from %q opens %d branches, more than the %d one fan-out may have; split it into fan-outs of at most %d, or narrow the edges' when", starts[0].From, len(starts), graph.MaxBranches, graph.MaxBranches),
			runapi.ErrTypeGraph, nil)
	}
	branches := r.openBranches(starts, parent, trunk)
	wg := workflow.NewWaitGroup(ctx)
	for _, b := range branches {
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			b.err = r.walkBranch(ctx, b)
		})
	}
	wg.Wait(ctx)
	join := ""
	joined := map[string]any{}
	for _, b := range branches {
		if b.err != nil {
			return runstore.Cursor{}, b.err
		}
		if join != "" && b.st.Join != join {
			return runstore.Cursor{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("fan-out branches meet at different joins (%q and %q); every branch of one fan-out must reach the same join", join, b.st.Join), runapi.ErrTypeGraph, nil)
		}
		join = b.st.Join
		if b.st.Last != "" {
			joined[b.st.Last] = b.outs[b.st.Last]
		}
	}
	node, ok := r.g.Node(join)
	if !ok {
		return runstore.Cursor{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("edge leads to unknown node %q", join), runapi.ErrTypeGraph, nil)
	}
	decided, conflicts, explain, err := r.joinWorkspaces(ctx, node, trunk, branches)
	if err != nil {
		return runstore.Cursor{}, err
	}
	if parent != nil {
		parent.ws = decided
	} else {
		r.cp.Workspace = decided
		r.cp.Branches = nil
	}
	input := map[string]any{runapi.JoinBranchesKey: joined, runapi.JoinOutputKey: joinOutput(node, branches, conflicts, explain)}
	return runstore.Cursor{Node: join, Input: input, From: starts[0].From}, nil
}

// branchRun is one branch of a fan-out in flight.
type branchRun struct {
	// st is the branch's record: in the checkpoint's Branches for a
	// fan-out on the trunk, so each save carries how far it got.
	st *runstore.BranchState
	sc *scope
	// outs are the outputs of the nodes the branch visited: what the
	// join's pick sees.
	outs map[string]map[string]any
	// stat is the branch's change against the fan-out, and kept whether
	// the join kept its files; set by joinWorkspaces.
	stat graph.DiffStat
	kept bool
	err  error
	// pick, by and why are the branch's values of a pick join's
	// expressions, and the error one of them gave (changeJoinWhy).
	pick *bool
	by   *float64
	why  string
}

// openBranches starts a branch per cursor, or, for a trunk fan-out that a
// checkpoint recorded in flight (a resume or rewind inside it), takes each
// branch up where the checkpoint left it.
func (r *runImpl) openBranches(starts []runstore.Cursor, parent *scope, trunk *runstore.WorkspaceState) []*branchRun {
	names := make([]string, len(starts))
	seen := map[string]int{}
	for i, s := range starts {
		name := s.Node
		if parent != nil {
			name = parent.name + "." + s.Node
		}
		if seen[name]++; seen[name] > 1 {
			name = fmt.Sprintf("%s-%d", name, seen[name])
		}
		names[i] = name
	}
	resume := parent == nil && len(r.cp.Branches) == len(starts)
	for i := range r.cp.Branches {
		resume = resume && r.cp.Branches[i].Name == names[i]
	}
	states := make([]runstore.BranchState, len(starts))
	for i, s := range starts {
		if resume {
			states[i] = r.cp.Branches[i]
			continue
		}
		next := s
		states[i] = runstore.BranchState{Name: names[i], Base: trunk.Commit, Workspace: trunk, Next: &next}
	}
	if parent == nil {
		r.cp.Branches = states
	}
	out := make([]*branchRun, len(starts))
	for i := range states {
		st := &states[i]
		b := &branchRun{st: st, sc: &scope{branch: true, name: st.Name, ws: st.Workspace}, outs: map[string]map[string]any{}}
		for _, n := range st.Nodes {
			b.outs[n] = r.cp.Outputs[n]
		}
		out[i] = b
	}
	return out
}

// walkBranch visits one branch's nodes until its join, committing each
// visit's files on the branch's own line.
func (r *runImpl) walkBranch(ctx workflow.Context, b *branchRun) error {
	for b.st.Next != nil {
		cur := *b.st.Next
		node, ok := r.g.Node(cur.Node)
		if !ok {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("edge leads to unknown node %q", cur.Node), runapi.ErrTypeGraph, nil)
		}
		if node.Kind == graph.KindJoin && !b.st.NestedJoin {
			b.st.Next, b.st.Join = nil, node.ID
			r.saveBranches(ctx, b)
			return nil
		}
		b.st.NestedJoin = false
		if node.Kind == graph.KindEnd {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("fan-out branch reached end node %q before a join", node.ID), runapi.ErrTypeGraph, nil)
		}
		if node.Session == graph.SessionPersist {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %q has session: persist inside a fan-out branch; a persist conversation cannot run in parallel branches (move it out of the fan-out)", node.ID), runapi.ErrTypeGraph, nil)
		}
		v, err := r.visit(ctx, node, cur, b.sc)
		if err != nil {
			return err
		}
		r.deleteBlobs(ctx, v.deleteAfterCommit)
		if !slices.Contains(b.st.Nodes, node.ID) {
			b.st.Nodes = append(b.st.Nodes, node.ID)
		}
		b.outs[node.ID] = sanitizeOutput(v.output)
		b.st.Last = node.ID
		next, err := r.selectNext(node, cur, v.output)
		if err != nil {
			return err
		}
		if len(next) > 1 || node.Fanout == graph.FanoutAll {
			j, err := r.fanout(ctx, next, b.sc)
			if err != nil {
				return err
			}
			// The nested fan-out's join is visited inside this branch.
			b.st.NestedJoin = true
			next = []runstore.Cursor{j}
		}
		b.st.Next, b.st.Workspace = &next[0], b.sc.ws
		r.saveBranches(ctx, b)
	}
	return nil
}

// saveBranches records how far the trunk fan-out's branches got, so that a
// resume or rewind to this checkpoint continues each from where it stood
// with its files. Branches finish visits concurrently; their saves run one
// at a time. Best effort: a branch does not wait on the store, and a save
// that fails only means a resume would run the branch's last visits again.
func (r *runImpl) saveBranches(ctx workflow.Context, b *branchRun) {
	if !r.ownsBranch(b) {
		return // a nested fan-out's branch: its parent's save records it
	}
	if r.saveMu == nil {
		r.saveMu = workflow.NewMutex(ctx)
	}
	if err := r.saveMu.Lock(ctx); err != nil {
		return
	}
	defer r.saveMu.Unlock()
	// Other branches may be inside a visit: the checkpoint counts only
	// finished visits, so that a resume from it numbers them as now.
	var err error
	if r.at(ctx, changeBranchVisitCounts, versionBranchVisitCounts) {
		err = r.saveAs(ctx, func(cp *runstore.Checkpoint) { cp.Visits = finishedVisits(r.cp.Visits, r.current) })
	} else {
		// Runs recorded before counted, while the save was in flight, on
		// the copy it sent: a branch that finished a visit then read one
		// visit too few, and its writes were lost.
		visits := r.cp.Visits
		r.cp.Visits = finishedVisits(visits, r.current)
		err = r.save(ctx)
		r.cp.Visits = visits
	}
	if err != nil {
		workflow.GetLogger(ctx).Warn("could not record a fan-out branch's progress; a resume would run its last visit again", "branch", b.st.Name, "error", err.Error())
	}
}

// finishedVisits is visits without the visits in progress (one of each
// node in current).
func finishedVisits(visits map[string]int, current []string) map[string]int {
	out := maps.Clone(visits)
	for _, n := range current {
		if out[n]--; out[n] <= 0 {
			delete(out, n)
		}
	}
	return out
}

// ownsBranch reports whether b's record is one of the checkpoint's.
func (r *runImpl) ownsBranch(b *branchRun) bool {
	for i := range r.cp.Branches {
		if &r.cp.Branches[i] == b.st {
			return true
		}
	}
	return false
}

// joinWorkspaces decides what the workspace is after join: it measures
// each branch's change, then keeps the trunk's files, one branch's (pick)
// or all of them merged (merge), and records the branches in Joined.
// explain says the branches carry the values the pick saw
// (changeJoinWhy).
func (r *runImpl) joinWorkspaces(ctx workflow.Context, join *graph.Node, trunk *runstore.WorkspaceState, branches []*branchRun) (decided *runstore.WorkspaceState, conflicts []activities.Conflict, explain bool, err error) {
	mode := join.Workspace.ModeOrTrunk()
	req := &activities.JoinRequest{
		RunID: r.cp.RunID, JoinID: join.ID, Visit: r.cp.Visits[join.ID] + 1, Trunk: trunk,
		Merge: mode == graph.JoinMerge, Started: workflow.Now(ctx),
	}
	for _, b := range branches {
		req.Branches = append(req.Branches, activities.JoinBranch{Name: b.st.Name, State: b.sc.ws})
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             fmt.Sprintf("%s: %s %d branches' files", join.ID, mode, len(branches)),
		TaskQueue:           runapi.TaskQueue,
		StartToCloseTimeout: joinTimeout,
		// Attempts go on (a store outage, a lost worker, or only workers
		// of an older build, without the activity, polling) until an
		// hour has passed; a hostile or over-limit branch is final.
		ScheduleToCloseTimeout: joinPatience,
		HeartbeatTimeout:       r.opts.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			NonRetryableErrorTypes: []string{activities.ErrTypeWorkspace, activities.ErrTypeBadRequest},
		},
	})
	var res activities.JoinResult
	if err := workflow.ExecuteActivity(actx, acts.JoinWorkspaces, req).Get(ctx, &res); err != nil {
		return nil, nil, false, temporal.NewNonRetryableApplicationError(fmt.Sprintf("join %q: the branches' workspaces could not be joined: %v; the run can continue with `tether resume %s` once the cause is fixed", join.ID, err, r.cp.RunID), runapi.ErrTypeWorkspace, err)
	}
	if len(res.Stats) != len(branches) {
		return nil, nil, false, temporal.NewNonRetryableApplicationError(fmt.Sprintf("join %q: the worker measured %d branches of %d", join.ID, len(res.Stats), len(branches)), runapi.ErrTypeWorkspace, nil)
	}
	for i, b := range branches {
		st := res.Stats[i]
		b.stat = graph.DiffStat{Files: st.Files, Added: st.Added, Removed: st.Removed, Lines: st.Added + st.Removed}
	}
	decided = trunk
	switch mode {
	case graph.JoinPick:
		explain = r.at(ctx, changeJoinWhy, versionJoinWhy)
		kept, err := pickBranch(join, branches, explain)
		if err != nil {
			return nil, nil, false, err
		}
		if kept != nil {
			kept.kept = true
			decided = kept.sc.ws
		}
	case graph.JoinMerge:
		if res.Merged != nil {
			decided = res.Merged
		}
		for _, b := range branches {
			b.kept = b.sc.ws != nil && b.sc.ws.Commit != trunk.Commit
		}
	}
	r.recordJoined(join.ID, req.Visit, trunk, branches)
	return decided, res.Conflicts, explain, nil
}

// pickBranch is the branch a pick join keeps: the first, in branch order,
// for which pick holds; with by, the one of those with the smallest by
// (the first of equals). Nil when pick holds for none. With explain, it
// records each branch's values on it, and evaluates pick on the branches
// after the one it kept too (an error there is recorded, not raised: the
// decision is the one it always was).
func pickBranch(join *graph.Node, branches []*branchRun, explain bool) (*branchRun, error) {
	graphErr := func(what, src string, b *branchRun, err error) error {
		msg := fmt.Sprintf("join %q: %s %q: %v", join.ID, what, src, err)
		if b != nil {
			msg = fmt.Sprintf("join %q: %s %q on branch %s: %v", join.ID, what, src, b.st.Name, err)
		}
		return temporal.NewNonRetryableApplicationError(msg, runapi.ErrTypeGraph, nil)
	}
	// Compiled once for every branch.
	pick, err := graph.CompilePick(join.Workspace.Pick)
	if err != nil {
		return nil, graphErr("pick", join.Workspace.Pick, nil, err)
	}
	var by *graph.Program
	if join.Workspace.By != "" {
		if by, err = graph.CompileBy(join.Workspace.By); err != nil {
			return nil, graphErr("by", join.Workspace.By, nil, err)
		}
	}
	var kept *branchRun
	best := 0.0
	for _, b := range branches {
		env := graph.BranchEnv{
			Branch: b.st.Name, Outputs: b.outs, Last: b.outs[b.st.Last], Diff: b.stat,
		}
		decided := kept != nil && by == nil
		ok, err := pick.EvalPick(env)
		if err != nil && decided {
			b.why = err.Error()
			continue
		}
		if err != nil {
			return nil, graphErr("pick", join.Workspace.Pick, b, err)
		}
		if explain {
			b.pick = &ok
		}
		if !ok || decided {
			continue
		}
		if by == nil {
			if !explain {
				return b, nil
			}
			kept = b
			continue
		}
		v, err := by.EvalBy(env)
		if err != nil {
			return nil, graphErr("by", join.Workspace.By, b, err)
		}
		if explain {
			b.by = &v
		}
		if kept == nil || v < best {
			kept, best = b, v
		}
	}
	return kept, nil
}

// recordJoined adds a join's branches to the checkpoint's Joined, newest
// last, at most runstore.MaxJoined.
func (r *runImpl) recordJoined(join string, visit int, trunk *runstore.WorkspaceState, branches []*branchRun) {
	for _, b := range branches {
		st := *b.st
		st.Base, st.Workspace, st.Next = trunk.Commit, b.sc.ws, nil
		if ws := st.Workspace; ws != nil && len(ws.Notes) > 0 {
			// The notes were the visit's news; a joined branch is history.
			lean := *ws
			lean.Notes = nil
			st.Workspace = &lean
		}
		st.Join, st.JoinVisit, st.Kept = join, visit, b.kept
		r.cp.Joined = append(r.cp.Joined, st)
	}
	if over := len(r.cp.Joined) - runstore.MaxJoined; over > 0 {
		r.cp.Joined = slices.Delete(r.cp.Joined, 0, over)
	}
}

// joinOutput is the join's output under "workspace": what it did, each
// branch's head and change, which it kept, and a merge's conflicts.
func joinOutput(join *graph.Node, branches []*branchRun, merged []activities.Conflict, explain bool) map[string]any {
	out := runapi.JoinOutput{Mode: join.Workspace.ModeOrTrunk(), Explained: explain}
	for _, b := range branches {
		head := ""
		if b.sc.ws != nil {
			head = b.sc.ws.Commit
		}
		if b.kept && out.Mode == graph.JoinPick {
			out.Kept = b.st.Name
		}
		out.Branches = append(out.Branches, runapi.JoinBranch{Name: b.st.Name, Head: head, Kept: b.kept, Change: b.stat, PickValue: b.pick, ByValue: b.by, Why: b.why})
	}
	if out.Mode == graph.JoinMerge {
		for _, c := range merged {
			out.Conflicts = append(out.Conflicts, runapi.JoinConflict{Path: c.Path, Branches: c.Branches, Ours: c.Ours, Theirs: c.Theirs})
		}
	}
	if explain {
		out.Pick, out.By = join.Workspace.Pick, join.Workspace.By
	}
	return out.Map()
}

// latestJoined are the branches of the latest join.
func (r *runImpl) latestJoined() []runstore.BranchState {
	n := len(r.cp.Joined)
	if n == 0 {
		return nil
	}
	last := r.cp.Joined[n-1]
	i := n - 1
	for i > 0 && r.cp.Joined[i-1].Join == last.Join && r.cp.Joined[i-1].JoinVisit == last.JoinVisit {
		i--
	}
	return slices.Clone(r.cp.Joined[i:])
}

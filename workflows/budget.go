package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/telemetry"
)

// addUsage adds what one visit of node cost to the run's sums.
func (r *runImpl) addUsage(node string, u agent.Usage) {
	if u.IsZero() {
		return
	}
	if r.cp.Usage == nil {
		r.cp.Usage = map[string]agent.Usage{}
	}
	r.cp.Usage[node] = r.cp.Usage[node].Add(u)
}

// stopIfOverBudget ends the run resumably once its spending crossed a
// budget: after the checkpoint of the visit that crossed it (change
// changeBudgets), or, for an execution that starts with a budget already
// spent (a resume that raised another budget, or none; a rewind to the
// stop's own checkpoint), before its first visit (changeBudgetAtStart;
// executions recorded before it ran one visit first). The run resumes at
// its next node once the budget is raised.
func (r *runImpl) stopIfOverBudget(ctx workflow.Context, change string, version workflow.Version) error {
	msg := OverBudget(r.cp)
	if msg == "" || !r.at(ctx, change, version) {
		return nil
	}
	r.cp.Status = runstore.StatusFailedResumable
	r.cp.Error = msg
	r.setStatus(ctx, r.cp.Status)
	if err := r.save(ctx); err != nil {
		workflow.GetLogger(ctx).Warn("could not record the budget stop in the run store; its failure carries the checkpoint", "error", err.Error())
	}
	telemetry.WorkflowBudgetStop(ctx)
	cp := *r.cp
	workflow.GetLogger(ctx).Warn("budget spent; stopping the run resumably", "reason", msg)
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("%s; raise it and continue with `tether resume %s --max-tokens N` or `--max-cost-usd X` (add --node NODE for a node's budget)", msg, r.cp.RunID),
		runapi.ErrTypeBudget, nil, &cp)
}

// OverBudget says which budget of cp's graph its spending crossed, or ""
// (runapi.OverBudget).
func OverBudget(cp *runstore.Checkpoint) string { return runapi.OverBudget(cp) }

// runUsage is what the whole run has cost so far.
func runUsage(cp *runstore.Checkpoint) agent.Usage { return runapi.RunUsage(cp) }

// visitExtras are what an agent visit's activity gets beyond its plan:
// the budgets it counts against, and why an earlier attempt of it stopped
// mid-turn.
type visitExtras struct {
	limits    []agent.Limit
	continues string
}

// budgetsMidVisit reports whether an agent visit of node in sc gives its
// activity the budgets it counts against, so that a spent budget stops it
// between two model calls (changeBudgetMidVisit): a trunk visit that
// counts against a budget, in an execution of this version. A fan-out
// branch's visits are checked after the fan-out, as before.
func (r *runImpl) budgetsMidVisit(ctx workflow.Context, node *graph.Node, sc *scope) bool {
	if sc.branch || len(runapi.Limits(r.cp, node.ID)) == 0 {
		return false
	}
	return r.at(ctx, changeBudgetMidVisit, versionBudgetMidVisit)
}

// continues is why the run's last execution stopped this visit mid-turn,
// when the visit goes on from there ("" otherwise).
func (r *runImpl) continues(node *graph.Node, visitNo int, sc *scope) string {
	if s := r.cp.Stopped; s != nil && !sc.branch && s.Node == node.ID && s.Visit == visitNo {
		return s.Reason
	}
	return ""
}

// stopMidVisit ends the run resumably after a visit of node that a spent
// budget stopped mid-turn (changeBudgetMidVisit): the visit's slot, usage
// and files are committed, its cursor stays on the node with the same
// input, and the checkpoint says which visit stopped, so that `tether
// resume` continues it in its own conversation once the budget is raised.
func (r *runImpl) stopMidVisit(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, v visitResult) error {
	r.cp.Cursor = []runstore.Cursor{cur}
	r.cp.Stopped = &runstore.StoppedVisit{Node: node.ID, Visit: r.cp.Visits[node.ID], Reason: v.budgetStop}
	r.cp.Status = runstore.StatusFailedResumable
	r.cp.Error = v.budgetStop
	r.setStatus(ctx, r.cp.Status)
	if err := r.save(ctx); err != nil {
		return r.failResumable(ctx, cur, err)
	}
	r.deleteBlobs(ctx, v.deleteAfterCommit)
	telemetry.WorkflowBudgetStop(ctx)
	cp := *r.cp
	workflow.GetLogger(ctx).Warn("budget spent mid-visit; stopping the run resumably", "node", node.ID, "reason", v.budgetStop)
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("%s, in the middle of node %s's visit %d; raise it and continue the visit with `tether resume %s --max-tokens N` or `--max-cost-usd X` (add --node NODE for a node's budget)", v.budgetStop, node.ID, cp.Stopped.Visit, r.cp.RunID),
		runapi.ErrTypeBudget, nil, &cp)
}

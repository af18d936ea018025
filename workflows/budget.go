package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/agent"
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
		ErrTypeBudget, nil, &cp)
}

// OverBudget says which budget of cp's graph its spending crossed, or ""
// (runapi.OverBudget).
func OverBudget(cp *runstore.Checkpoint) string { return runapi.OverBudget(cp) }

// runUsage is what the whole run has cost so far.
func runUsage(cp *runstore.Checkpoint) agent.Usage { return runapi.RunUsage(cp) }

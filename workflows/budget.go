package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
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

// runUsage is what the whole run has cost so far.
func runUsage(cp *runstore.Checkpoint) agent.Usage {
	var total agent.Usage
	for _, k := range sortedKeys(cp.Usage) {
		total = total.Add(cp.Usage[k])
	}
	return total
}

// OverBudget says which budget of cp's graph (the run's, or a node's) its
// spending crossed, or "" when none is spent: a run resumed in that state
// stops again before its next visit.
func OverBudget(cp *runstore.Checkpoint) string {
	if msg := crossed("the run's budget", cp.Graph.Budget, runUsage(cp)); msg != "" {
		return msg
	}
	for _, n := range cp.Graph.Nodes {
		if msg := crossed("the budget of node "+n.ID, n.Budget, cp.Usage[n.ID]); msg != "" {
			return msg
		}
	}
	return ""
}

func crossed(what string, b *graph.Budget, u agent.Usage) string {
	switch {
	case b == nil:
	case b.MaxTokens > 0 && u.Tokens() > b.MaxTokens:
		return fmt.Sprintf("%s is spent: %d tokens used, max_tokens is %d", what, u.Tokens(), b.MaxTokens)
	case b.MaxCostUSD > 0 && u.CostUSD > b.MaxCostUSD:
		return fmt.Sprintf("%s is spent: $%.4f used, max_cost_usd is $%.2f", what, u.CostUSD, b.MaxCostUSD)
	}
	return ""
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
	if msg == "" || workflow.GetVersion(ctx, change, workflow.DefaultVersion, version) != version {
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

package telemetry

import "go.temporal.io/sdk/workflow"

// Counts made from workflow code. They go through the worker's metrics
// handler as workflow.GetMetricsHandler gives it, which counts nothing
// while the workflow replays its history, so a replay (a new worker, a
// query, an evicted cache) never counts a stop twice. They are
// deterministic, and workflowcheck passes them.

// WorkflowFailStop counts one fail-stop of a run: the workflow failing
// resumably with its checkpoint (tether_fail_stops_total).
func WorkflowFailStop(ctx workflow.Context) {
	workflow.GetMetricsHandler(ctx).Counter(FailStopsMetric).Inc(1)
}

// WorkflowBudgetStop counts one run stopped by a budget, such as a node's
// max_visits (tether_budget_stops_total).
func WorkflowBudgetStop(ctx workflow.Context) {
	workflow.GetMetricsHandler(ctx).Counter(BudgetStopsMetric).Inc(1)
}

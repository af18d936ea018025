package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/runapi"
)

// claimRunID refuses a new run whose id another run has (runstore's run-id
// rule): before its first visit, a run started without a checkpoint, or
// from a fork's (which no execution of this id saved yet), asks the run
// store and Temporal, and fails with the reason `tether run` gives when
// either knows the id. It writes nothing: the store holds the other run's
// checkpoints, which a failure record of this one would mix with.
// Only the first execution of a chain asks: one continued as new, retried
// or reset from it is the same run. Executions recorded before
// changeRunIDCheck start without asking.
func (r *runImpl) claimRunID(ctx workflow.Context) error {
	info := workflow.GetInfo(ctx)
	if cp := r.in.Checkpoint; cp != nil && cp.Seq != 0 {
		return nil
	}
	if info.ContinuedExecutionRunID != "" || (info.FirstRunID != "" && info.FirstRunID != info.WorkflowExecution.RunID) {
		return nil
	}
	if !r.at(ctx, changeRunIDCheck, versionRunIDCheck) {
		return nil
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary:             "check that run id " + r.cp.RunID + " is free",
		StartToCloseTimeout: checkpointTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumAttempts: 3},
	})
	req := &activities.CheckRunIDRequest{RunID: r.cp.RunID, Execution: info.WorkflowExecution.RunID}
	var taken string
	if err := workflow.ExecuteLocalActivity(lctx, activities.CheckRunIDName, req).Get(ctx, &taken); err != nil {
		failTaskIfWorkerUnhealthy(r.cp.RunID, err)
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("run %s did not start: could not check that no other run has its id (%s); start it again once the run store and Temporal answer", r.cp.RunID, activities.ErrorText(err)),
			runapi.ErrTypeRunIDUnchecked, nil)
	}
	if taken != "" {
		return temporal.NewNonRetryableApplicationError(taken, runapi.ErrTypeRunIDTaken, nil)
	}
	return nil
}

package cli

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// claimRunID refuses a new run's id when Temporal or the run store knows
// it, open or closed (runstore's run-id rule), saying which and what to do.
// It runs before anything is written under the id. The two are asked at
// once (two round trips on every `tether run`); Temporal's answer is the
// one reported when both know the id.
func (a *app) claimRunID(ctx context.Context, id string) error {
	type held struct {
		holder string
		err    error
	}
	inStore := make(chan held, 1)
	go func() {
		runs, err := a.store(ctx)
		if err != nil {
			inStore <- held{err: failedErr(err)}
			return
		}
		holder, err := runs.Holder(ctx, id)
		if err != nil {
			err = failedErr(fmt.Errorf("ask the run store %s whether run %s exists: %w", a.cfg.BlobURL, id, err))
		}
		inStore <- held{holder, err}
	}()
	d, err := a.describe(ctx, id)
	h := <-inStore // the store is the app's from here on
	if err != nil {
		return failedErr(fmt.Errorf("ask Temporal whether run %s exists: %w", id, err))
	}
	if d != nil {
		holder := fmt.Sprintf("Temporal has run %q (%s", id, runapi.ExecutionStatus(statusOf(d)))
		if g := memoGraph(d); g != "" {
			holder += fmt.Sprintf(", graph %q", g)
		}
		holder += ")"
		if statusOf(d) == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			holder += fmt.Sprintf(" and it is still open: follow it with `tether status %s --follow`", id)
		}
		return usageErr("%v", runstore.RunIDTaken(id, holder))
	}
	if h.err != nil {
		return h.err
	}
	if h.holder != "" {
		return usageErr("%v", runstore.RunIDTaken(id, h.holder))
	}
	return nil
}

// memoGraph is the graph name `tether run` put in a run's memo.
func memoGraph(d *workflowservice.DescribeWorkflowExecutionResponse) string {
	p := d.GetWorkflowExecutionInfo().GetMemo().GetFields()["graph"]
	if p == nil {
		return ""
	}
	var g string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &g); err != nil {
		return ""
	}
	return g
}

// alreadyStarted turns Temporal's refusal to start a second execution
// under a taken id (a race past claimRunID) into the run-id rule's words.
func alreadyStarted(id string, err error) error {
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return usageErr("%v", runstore.RunIDTaken(id, fmt.Sprintf("Temporal has run %q", id)))
	}
	return nil
}

// deleteExecutions removes run id's closed executions from Temporal, so
// that a deleted run's id is free again; it returns how many it removed.
func (a *app) deleteExecutions(ctx context.Context, id string) (int, error) {
	c, err := a.temporal()
	if err != nil {
		return 0, err
	}
	n := 0
	var page []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q", id), NextPageToken: page})
		if err != nil {
			return n, fmt.Errorf("list the executions of run %s in Temporal: %w", id, err)
		}
		for _, e := range resp.GetExecutions() {
			_, err := c.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{
				Namespace:         a.cfg.Namespace,
				WorkflowExecution: e.GetExecution(),
			})
			var nf *serviceerror.NotFound
			switch {
			case errors.As(err, &nf): // deleted a moment ago; visibility lags
			case err != nil:
				return n, fmt.Errorf("delete execution %s of run %s from Temporal: %w", e.GetExecution().GetRunId(), id, err)
			default:
				n++
			}
		}
		if page = resp.GetNextPageToken(); len(page) == 0 {
			return n, nil
		}
	}
}

// checkpointErr is a command's failure to use checkpoint seq of run: a
// refusal under the rewind rule (dropped, nothing to run) is the user's
// choice to change (exit 2); anything else is a failure (exit 1).
func checkpointErr(run string, seq int64, err error) error {
	if errors.Is(err, runstore.ErrDropped) || errors.Is(err, runstore.ErrNothingToRun) {
		return usageErr("run %s checkpoint %d: %v", run, seq, err)
	}
	return failedErr(fmt.Errorf("run %s checkpoint %d: %w", run, seq, err))
}

package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/runstore"
)

// CheckRunIDName is the registered name of the local activity with which
// a new run checks, before its first visit, that no other run has its id.
const CheckRunIDName = "CheckRunID"

// Executions is what CheckRunID asks Temporal (client.Client has it).
type Executions interface {
	ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
	DescribeWorkflow(ctx context.Context, workflowID, runID string) (*client.WorkflowExecutionDescription, error)
}

var _ Executions = client.Client(nil)

// CheckRunIDRequest names a new run and the Temporal execution it is.
type CheckRunIDRequest struct {
	RunID string `json:"run_id"`
	// Execution is the Temporal run id of the execution asking: the one
	// execution of the workflow id that is not another run.
	Execution string `json:"execution"`
}

// CheckRunID says why req.RunID cannot name a new run ("" when it can):
// the run store holds checkpoints of it, or Temporal has another execution
// under it. The wording is runstore.RunIDTaken's, as `tether run` says it.
func (a *Activities) CheckRunID(ctx context.Context, req *CheckRunIDRequest) (string, error) {
	holder, err := a.Runs.Holder(ctx, req.RunID)
	if err != nil {
		if a.Health.Check(ctx) != nil {
			return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("check run id %s on worker %s: %s", req.RunID, a.Queue, ErrorText(a.Health.Err())), ErrTypeWorkerUnhealthy, nil)
		}
		return "", fmt.Errorf("read the run store: %w", err)
	}
	if holder == "" && a.Temporal != nil {
		if holder, err = TemporalHolder(ctx, a.Temporal, req.RunID, req.Execution); err != nil {
			return "", fmt.Errorf("ask Temporal: %w", err)
		}
	}
	if holder == "" {
		return "", nil
	}
	return runstore.RunIDTaken(req.RunID, holder).Error(), nil
}

// TemporalHolder says which execution of workflow id other than except
// Temporal has ("" when none): `Temporal has run "b1" (completed)`. The
// list comes from visibility, which may still show an execution deleted a
// moment ago, so each one is described before it counts.
func TemporalHolder(ctx context.Context, c Executions, id, except string) (string, error) {
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query:    fmt.Sprintf("WorkflowId = %q", id),
		PageSize: 10,
	})
	if err != nil {
		return "", err
	}
	for _, e := range resp.GetExecutions() {
		runID := e.GetExecution().GetRunId()
		if runID == except {
			continue
		}
		d, err := c.DescribeWorkflow(ctx, id, runID)
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			continue
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Temporal has run %q (%s)", id, ExecutionStatus(d.RawResponse.GetWorkflowExecutionInfo().GetStatus())), nil
	}
	return "", nil
}

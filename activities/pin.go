package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// PinExecutionName is the registered name of the local activity with
// which an execution a move started pins itself to its new build
// (workflows, move.go).
const PinExecutionName = "PinExecution"

// Pinner sets an execution's versioning override (client.Client has it).
type Pinner interface {
	UpdateWorkflowExecutionOptions(ctx context.Context, req client.UpdateWorkflowExecutionOptionsRequest) (client.WorkflowExecutionOptions, error)
}

var _ Pinner = client.Client(nil)

// PinRequest names an execution and the build of its worker deployment to
// pin it to; an empty BuildID removes the pin.
type PinRequest struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	Deployment string `json:"deployment"`
	BuildID    string `json:"build_id,omitempty"`
}

// PinExecution pins one execution to a build of its worker deployment
// (a pinned versioning override, as `temporal workflow update-options
// --versioning-override-behavior pinned` sets), or removes the pin. It is
// idempotent: setting the pin it has changes nothing.
func (a *Activities) PinExecution(ctx context.Context, req *PinRequest) error {
	if a.Pins == nil {
		return temporal.NewNonRetryableApplicationError("this worker cannot change an execution's versioning (no Temporal client)", ErrTypeBadRequest, nil)
	}
	change := &client.VersioningOverrideChange{}
	if req.BuildID != "" {
		change.Value = &client.PinnedVersioningOverride{Version: worker.WorkerDeploymentVersion{DeploymentName: req.Deployment, BuildID: req.BuildID}}
	}
	_, err := a.Pins.UpdateWorkflowExecutionOptions(ctx, client.UpdateWorkflowExecutionOptionsRequest{
		WorkflowId: req.WorkflowID, RunId: req.RunID,
		WorkflowExecutionOptionsChanges: client.WorkflowExecutionOptionsChanges{VersioningOverride: change},
	})
	if err != nil {
		return fmt.Errorf("set the versioning override of %s (run %s) to build %q: %w", req.WorkflowID, req.RunID, req.BuildID, err)
	}
	return nil
}

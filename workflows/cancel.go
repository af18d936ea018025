package workflows

import (
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/runstore"
)

// endCanceled records a run that was canceled (ctx canceled, whatever err
// the cancel surfaced as): TetherStatus and a last checkpoint say
// `canceled`, so a query for waiting or running runs no longer finds it,
// and the run ends canceled rather than failed. It works in a
// disconnected context, the run's own being done. A terminated run runs
// no more code and cannot do this (the docs' queries filter on
// ExecutionStatus for that). Executions recorded before changeCancelStatus
// end as they did.
func (r *runImpl) endCanceled(ctx workflow.Context, err error) error {
	if err == nil || !errors.Is(ctx.Err(), workflow.ErrCanceled) {
		return err
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if !r.at(dctx, changeCancelStatus, versionCancelStatus) {
		return err
	}
	r.cp.Status = runstore.StatusCanceled
	r.cp.Error = "canceled through Temporal; continue it with `tether resume " + r.cp.RunID + "`"
	r.current = nil
	r.setStatus(dctx, r.cp.Status)
	if serr := r.save(dctx); serr != nil {
		workflow.GetLogger(ctx).Warn("could not record the canceled run in the run store", "error", serr.Error())
	}
	// The cancel may have surfaced inside a visit, as the visit's failure:
	// the run was canceled, not failed.
	return temporal.NewCanceledError()
}

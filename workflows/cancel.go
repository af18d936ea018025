package workflows

import (
	"errors"
	"slices"

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
	if r.at(dctx, changeCancelUncounted, versionCancelUncounted) {
		r.uncount(r.canceled)
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

// uncount takes the visits a cancel stopped off the path and the visit
// counts: they did not happen, and a resume runs each again under its
// number.
func (r *runImpl) uncount(stopped []runstore.EndedVisit) {
	for _, v := range stopped {
		for i := len(r.cp.Path) - 1; i >= 0; i-- {
			if s := r.cp.Path[i]; s.Node == v.Node && s.Visit == v.Visit && s.Status == "failed" {
				r.cp.Path = slices.Delete(r.cp.Path, i, i+1)
				r.cp.PathTotal--
				break
			}
		}
		if r.cp.Visits[v.Node] == v.Visit {
			r.cp.Visits[v.Node] = v.Visit - 1
		}
	}
}

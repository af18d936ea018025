package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// withoutCheckpoint is what `tether status` says of a run the run store
// has no checkpoint of, telling apart the cases a person acts on
// differently: Temporal unreachable, a run open (with or without a worker)
// that has not written one yet, a run closed without one (whose fail-stop
// may carry one all the same), and a run neither knows.
func (a *app) withoutCheckpoint(ctx context.Context, id string, status enumspb.WorkflowExecutionStatus, live string, l *loaded) (*loaded, error) {
	switch {
	case l.workers.Temporal != nil || strings.HasPrefix(live, "Temporal could not"):
		return nil, failedErr(fmt.Errorf("cannot show run %q: %s, and the run store %s has no checkpoint of it; start Temporal or set TEMPORAL_ADDRESS, and check that TETHER_BLOB_URL names the store the run used", id, live, a.cfg.BlobURL))
	case status == enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED:
		return nil, usageErr("run %q not found: Temporal at %s does not know the run, and the run store %s has no checkpoint of it; check the run id (tether list), TEMPORAL_ADDRESS and TETHER_BLOB_URL", id, a.cfg.TemporalAddress, a.cfg.BlobURL)
	case status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		l.st = &runapi.State{RunID: id, Status: runstore.StatusRunning}
		l.source = fmt.Sprintf("Temporal only: %s; the run has written no checkpoint yet", live)
		return l, nil
	}
	// Closed: a fail-stop carries its checkpoint in its failure even when
	// the store never received one.
	c, _ := a.temporal()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	werr := c.GetWorkflow(wctx, id, "").Get(wctx, nil)
	if appErr, stopped := runapi.StopError(werr); stopped && appErr.HasDetails() {
		var cp runstore.Checkpoint
		if err := appErr.Details(&cp); err == nil {
			l.st = runapi.StateOf(&cp)
			l.source = fmt.Sprintf("Temporal: the checkpoint the run's stop carried (the run store %s has none; `tether resume %s` continues from it)", a.cfg.BlobURL, id)
			return l, nil
		}
	}
	l.st = &runapi.State{RunID: id, Status: runapi.ExecutionStatus(status)}
	if werr != nil {
		l.st.Error = runapi.ErrorText(werr)
	}
	l.source = fmt.Sprintf("Temporal only: the run is closed (%s) and never wrote a checkpoint to the run store %s, so it cannot be resumed; start it again", runapi.ExecutionStatus(status), a.cfg.BlobURL)
	return l, nil
}

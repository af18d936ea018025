package cli

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/version"
)

// cancelWait is how long `tether cancel` waits to see the run close.
const cancelWait = 30 * time.Second

func (a *app) cancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel an open run; it records that it was canceled and can be resumed",
		Long: `Cancel an open run through Temporal. The run stops its visit in flight,
writes a last checkpoint and sets TetherStatus to "canceled", and ends
canceled; tether resume RUN continues it from that checkpoint. (A run
terminated with temporal workflow terminate runs no more code and keeps the
TetherStatus it had: filter with ExecutionStatus="Running".)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			msg, err := a.cancel(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(a.out, msg)
			return nil
		},
	}
}

// cancel cancels open run id and waits a while for it to close: `tether
// cancel`, and the console's Cancel.
func (a *app) cancel(ctx context.Context, id string) (string, error) {
	c, err := a.temporal()
	if err != nil {
		return "", failedErr(err)
	}
	d, err := a.describe(ctx, id)
	if err != nil {
		return "", failedErr(fmt.Errorf("describe run %s: %w", id, err))
	}
	switch statusOf(d) {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
	case enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED:
		return "", usageErr("run %s is not known to Temporal at %s; check the id (tether list)", id, a.cfg.TemporalAddress)
	default:
		return "", usageErr("run %s is not open (%s); nothing to cancel", id, temporalStatusName(statusOf(d)))
	}
	if err := c.CancelWorkflow(ctx, id, ""); err != nil {
		return "", failedErr(fmt.Errorf("cancel run %s: %w", id, err))
	}
	wctx, cancel := context.WithTimeout(ctx, cancelWait)
	defer cancel()
	if err := c.GetWorkflow(wctx, id, "").Get(wctx, nil); err != nil && wctx.Err() != nil {
		return fmt.Sprintf("cancel of run %s requested; it ends when a worker handles it (none did within %s: is a worker up?)", id, cancelWait), nil
	}
	return fmt.Sprintf("run %s canceled; continue it with `tether resume %s`", id, id), nil
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of tether, its Temporal SDK, and the checkpoint format it reads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(a.out, versionLine())
			return nil
		},
	}
}

// versionLine is `tether v1.2.3 (commit 0123456789ab) (go1.26.8,
// temporal sdk v1.51.0, checkpoint format 1)`.
func versionLine() string {
	return fmt.Sprintf("tether %s (%s, temporal sdk %s, checkpoint format %d)", version.Get(), runtime.Version(), version.SDK(), runstore.FormatVersion)
}

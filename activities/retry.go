package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blobref"
)

// lostCause is what an attempt the server started again knows of how its
// predecessor ended: the server retries a visit only when its worker was
// lost (a heartbeat timeout) or handed it back (WorkerStopping).
const lostCause = "its worker was lost or stopped"

// lostAttempts is what the attempts of this visit before this one did,
// if any was interrupted, with every blob key in it hidden (withoutRefs).
func lostAttempts(ctx context.Context, req *VisitRequest) *agent.Interruption {
	lost := interrupted(ctx, req)
	if lost == nil {
		return nil
	}
	c := withoutRefs(*lost)
	return &c
}

// interrupted is what the attempts of this visit before this one did, if
// any was interrupted: those the workflow reports (req.RetryOf, when it
// started the visit again itself) and, when the server started this
// attempt again, the last heartbeat of the attempt before it, which
// carries what came before that one.
func interrupted(ctx context.Context, req *VisitRequest) *agent.Interruption {
	lost := req.RetryOf
	if lost != nil {
		c := lost.Bound()
		lost = &c
	}
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).Attempt <= 1 {
		return lost
	}
	var last agent.Progress
	if activity.HasHeartbeatDetails(ctx) {
		// A heartbeat of the blob store's retry hook from before progress
		// began, or of an older worker, may not be progress: then only
		// the attempt count is known.
		if err := activity.GetHeartbeatDetails(ctx, &last); err != nil {
			last = agent.Progress{}
		}
	}
	if last.Interrupted == nil {
		last.Interrupted = lost
	}
	next := agent.After(last, lostCause)
	return &next
}

// withoutRefs is what earlier attempts did with every blob key in its free
// text hidden (internal/blobref), before a note, a prompt or a tool's
// environment is made from it: its cause quotes a failure (a store's error
// names the key it failed on), and its calls and files are what the
// agent's tools reported, which the agent chose.
func withoutRefs(i agent.Interruption) agent.Interruption {
	i.Cause = blobref.Hide(i.Cause)
	i.Calls = hideAll(i.Calls)
	i.Files = hideAll(i.Files)
	return i
}

func hideAll(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = blobref.Hide(s)
	}
	return out
}

// withProgress adds what the attempt did (its last heartbeat details) to
// a failure the workflow may start the visit again after (a failure that
// may pass, a worker that stopped), so that the next activity can tell
// the agent or the tool; any other error is returned as it is.
func withProgress(err error, details []any) error {
	appErr, ok := err.(*temporal.ApplicationError)
	if !ok || len(details) == 0 || appErr.HasDetails() {
		return err
	}
	if t := appErr.Type(); t != ErrTypeMayPass && t != ErrTypeWorkerStopping {
		return err
	}
	cause := errors.Unwrap(appErr)
	if appErr.NonRetryable() {
		return temporal.NewNonRetryableApplicationError(appErr.Message(), appErr.Type(), cause, details[0])
	}
	return temporal.NewApplicationErrorWithCause(appErr.Message(), appErr.Type(), cause, details[0])
}

// retryEnv is the variable a tool's command gets when earlier attempts of
// its visit were interrupted.
func retryEnv(lost *agent.Interruption) []string {
	if lost == nil {
		return nil
	}
	return []string{agent.RetryOfEnv + "=" + lost.Env()}
}

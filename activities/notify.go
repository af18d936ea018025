package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/notify"
)

// ErrTypeNoticeRefused: a notice its receiver refused (a 4xx, a redirect,
// an untrusted certificate), or one for an endpoint this worker does not
// have: sending it again would fail the same way.
const ErrTypeNoticeRefused = "NoticeRefused"

// NoticeEndpointsName is the registered name of NoticeEndpoints, which the
// workflow runs as a local activity.
const NoticeEndpointsName = "NoticeEndpoints"

// NoticeEndpoint is an endpoint as a workflow may know it: its name and
// the events its own filter lets through, never its URL.
type NoticeEndpoint struct {
	Name   string   `json:"name"`
	Events []string `json:"events,omitempty"`
}

// NoticeEndpoints lists this worker's endpoints (TETHER_NOTIFY), for a
// run to decide which notices to send; none when it has no Notifier.
func (a *Activities) NoticeEndpoints(ctx context.Context) ([]NoticeEndpoint, error) {
	if a.Notifier == nil {
		return nil, nil
	}
	out := make([]NoticeEndpoint, len(a.Notifier.Endpoints))
	for i, ep := range a.Notifier.Endpoints {
		out[i] = NoticeEndpoint{Name: ep.Name, Events: ep.Events}
	}
	return out, nil
}

// Notify sends one notice to one endpoint. A failure that may pass is
// returned as it is, for the activity's retry policy; anything else is
// final (ErrTypeNoticeRefused). Every attempt sends the same body with the
// same idempotency key.
func (a *Activities) Notify(ctx context.Context, n *notify.Notice) error {
	if n == nil || n.Endpoint == "" || n.Key == "" || n.Run == "" {
		return temporal.NewNonRetryableApplicationError("Notify needs a notice with an endpoint, a key and a run", ErrTypeBadRequest, nil)
	}
	if a.Notifier == nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("worker %s has no %s, so it cannot send notice %s to %q; give every worker the same %s", a.Queue, notify.Env, n.Key, n.Endpoint, notify.Env), ErrTypeNoticeRefused, nil)
	}
	// Heartbeats let a lost worker's attempt be retried after the
	// heartbeat timeout, not the attempt's whole time.
	stop := a.heartbeat(ctx)
	var err error
	if ep, ok := a.Notifier.Endpoint(n.Endpoint); ok && ep.Format == notify.FormatGitHub {
		err = a.githubNotice(ctx, n)
	} else {
		err = a.Notifier.Send(ctx, *n)
	}
	stop()
	switch {
	case err == nil:
		a.logger().Info("notice sent", "run", n.Run, "event", n.Event, "endpoint", n.Endpoint, "key", n.Key)
		return nil
	case errors.Is(err, notify.ErrTransient):
		a.logger().Warn("notice not delivered yet; it is sent again", "run", n.Run, "event", n.Event, "endpoint", n.Endpoint, "key", n.Key, "error", err.Error())
		return err
	case ctx.Err() != nil:
		return err
	default:
		a.logger().Error("notice refused; it is not sent again", "run", n.Run, "event", n.Event, "endpoint", n.Endpoint, "key", n.Key, "error", err.Error())
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNoticeRefused, err)
	}
}

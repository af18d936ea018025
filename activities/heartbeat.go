package activities

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
)

// HeartbeatOnRetry is the blob store's retry hook for workers: while a
// store operation waits out an outage inside an activity, the activity
// keeps heartbeating, so the wait is not taken for a dead worker.
func HeartbeatOnRetry(ctx context.Context, op, key string, attempt int, err error) {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).IsLocalActivity {
		return
	}
	note := fmt.Sprintf("store %s %s: attempt %d failed (%v); retrying", op, key, attempt, err)
	// The visit's progress stays first: it is what `tether status` shows,
	// and what an attempt after this one, should it be lost, reads back.
	activity.RecordHeartbeat(ctx, append(visitProgress.details(progressKey(ctx)), note)...)
}

// untilWorkerStops returns a context that is cancelled once the worker
// has been stopping for ShutdownGrace (a visit that ends before then ends
// as it would have), and a func that reports whether that happened.
func (a *Activities) untilWorkerStops(ctx context.Context) (context.Context, func() bool) {
	if !activity.IsActivity(ctx) {
		return ctx, func() bool { return false }
	}
	runCtx, cancel := context.WithCancel(ctx)
	var stopped atomic.Bool
	go func() {
		select {
		case <-activity.GetWorkerStopChannel(ctx):
		case <-runCtx.Done():
			return
		}
		grace := time.NewTimer(a.ShutdownGrace)
		defer grace.Stop()
		select {
		case <-grace.C:
			stopped.Store(true)
			cancel()
		case <-runCtx.Done():
		}
	}()
	return runCtx, func() bool {
		s := stopped.Load()
		cancel()
		return s
	}
}

// heartbeat records a heartbeat periodically until stopped, so a dead
// worker is noticed within the heartbeat timeout rather than the node's.
func (a *Activities) heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	every := a.HeartbeatEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	// Beat well inside the timeout the workflow chose, whatever it is.
	if ht := activity.GetInfo(ctx).HeartbeatTimeout; ht > 0 && every > ht/3 {
		every = ht / 3
	}
	// Every heartbeat of the attempt carries its visit's latest progress,
	// once the visit has begun (see runAgent). The first goes out at once
	// only when it has something to say (what lost attempts did, which it
	// must not let the first periodic beat replace): a first attempt's
	// would say nothing, and the SDK sends a first heartbeat as a round
	// trip to the server, a write of the run's state, before the visit
	// could start. The ticker's first beat comes well inside the timeout.
	key := progressKey(ctx)
	visitProgress.hold(key)
	if details := visitProgress.details(key); len(details) > 0 {
		activity.RecordHeartbeat(ctx, details...)
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, visitProgress.details(key)...)
			}
		}
	}()
	return func() {
		close(done)
		visitProgress.release(key)
	}
}

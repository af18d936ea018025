package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"
)

// probeTimeout bounds one probe of the store: a store that does not
// answer a small write, read and delete within it is not fit to serve.
const probeTimeout = 15 * time.Second

// Health says whether this worker's store works. A worker whose store
// fails is unhealthy: it takes no new task (its task slots wait on
// Wait), hands back the visit that found the fault (storeFault) so that
// another worker runs it, and probes the store until it answers again.
// Runs are not failed by one worker's broken store. A nil *Health is
// always healthy.
type Health struct {
	probe    func(context.Context) error
	logger   *slog.Logger
	onChange func(healthy bool, cause error)

	mu    sync.Mutex
	cause error
	// up is closed while the worker is healthy; a new one is made when it
	// turns unhealthy.
	up chan struct{}
}

// NewHealth returns a healthy Health that checks the store with probe.
// onChange, if set, hears every change (a metric, a health endpoint).
func NewHealth(probe func(context.Context) error, logger *slog.Logger, onChange func(healthy bool, cause error)) *Health {
	up := make(chan struct{})
	close(up)
	if logger == nil {
		logger = slog.Default()
	}
	return &Health{probe: probe, logger: logger, onChange: onChange, up: up}
}

// Err is why the worker is unhealthy, or nil.
func (h *Health) Err() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cause
}

// Wait blocks until the worker is healthy or ctx ends.
func (h *Health) Wait(ctx context.Context) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	up := h.up
	h.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Check probes the store now; a failure makes the worker unhealthy and
// is returned.
func (h *Health) Check(ctx context.Context) error {
	if h == nil {
		return nil
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	err := h.probe(pctx)
	if err != nil {
		h.set(fmt.Errorf("its store fails a write, read and delete probe: %s", ErrorText(err)))
	} else {
		h.set(nil)
	}
	return err
}

func (h *Health) set(cause error) {
	h.mu.Lock()
	was := h.cause
	h.cause = cause
	switch {
	case cause != nil && was == nil:
		h.up = make(chan struct{})
	case cause == nil && was != nil:
		close(h.up)
	}
	h.mu.Unlock()
	switch {
	case cause != nil && was == nil:
		h.logger.Error("worker unhealthy: it takes no visit until its store answers again; its visits go to other workers", "cause", cause.Error())
	case cause == nil && was != nil:
		h.logger.Info("worker healthy again: its store answers; taking visits", "was", was.Error())
	default:
		return
	}
	if h.onChange != nil {
		h.onChange(cause == nil, cause)
	}
}

// Watch probes the store every interval while the worker is unhealthy,
// until ctx ends.
func (h *Health) Watch(ctx context.Context, every time.Duration) {
	if h == nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if h.Err() != nil {
				_ = h.Check(ctx)
			}
		}
	}
}

// storeFault hands a visit back when its failure may be the store's: it
// failed in a way that is not final, or it finished but could not pack
// its session. If the store then fails a probe, the worker turns
// unhealthy and the visit is returned as handed back (ErrTypeWorkerStopping),
// which the server retries on another worker; a visit whose store passes
// the probe keeps its own result.
func (a *Activities) storeFault(ctx context.Context, res *VisitResult, err error) (*VisitResult, error) {
	switch {
	case a.Health == nil || errors.Is(ctx.Err(), context.Canceled):
		return res, err
	case err == nil && (res == nil || res.PackError == ""):
		return res, err
	case err != nil && finalError(err):
		return res, err
	}
	perr := a.Health.Check(ctx)
	if perr == nil {
		return res, err
	}
	msg := fmt.Sprintf("worker %s handed the visit back: %s; another worker takes it", a.Queue, ErrorText(a.Health.Err()))
	return nil, temporal.NewApplicationErrorWithCause(msg, ErrTypeWorkerStopping, nil)
}

// finalError is an error no other worker would cure: one the activity
// made final, or a cancellation.
func finalError(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		return true
	}
	return errors.Is(err, context.Canceled) || temporal.IsCanceledError(err)
}

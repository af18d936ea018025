package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tether-run/tether/internal/runapi"
)

// pollerAlive is how recently a poller must have asked for work to count
// as a worker that is up: a worker long-polls, asking again within about
// a minute, while Temporal lists a poller for minutes after it is gone.
const pollerAlive = 90 * time.Second

// noWorkerGrace is how long a command waits for a worker before it says
// that none is polling.
const noWorkerGrace = 2 * time.Second

// workers is what a command knows about the workers polling the task
// queue: it says once when none is, and once when one is again.
type workers struct {
	a     *app
	what  string // what waits for a worker: "the run", "the answer"
	since time.Time
	// said is whether "no worker" was said and not yet taken back.
	said bool
	mu   sync.Mutex
}

func (a *app) workers(what string) *workers {
	return &workers{a: a, what: what, since: time.Now()}
}

// livePollers lists the identities of the workers polling the task queue
// for workflow tasks now.
func (a *app) livePollers(ctx context.Context) ([]string, error) {
	c, err := a.temporal()
	if err != nil {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	d, err := c.DescribeTaskQueue(qctx, runapi.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range d.GetPollers() {
		if t := p.GetLastAccessTime(); t != nil && time.Since(t.AsTime()) < pollerAlive {
			out = append(out, p.GetIdentity())
		}
	}
	return out, nil
}

// check says, on w, that no worker polls (once, after noWorkerGrace) or
// that one does again.
func (ws *workers) check(ctx context.Context, w io.Writer) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if time.Since(ws.since) < noWorkerGrace && !ws.said {
		return
	}
	live, err := ws.a.livePollers(ctx)
	if err != nil {
		return // Temporal itself did not answer; the command says so elsewhere
	}
	switch {
	case len(live) == 0 && !ws.said:
		ws.said = true
		fmt.Fprintf(w, "! no worker is polling task queue %q at %s: %s waits until one starts (tether-worker, or make run); still waiting\n", runapi.TaskQueue, ws.a.cfg.TemporalAddress, ws.what)
	case len(live) > 0 && ws.said:
		ws.said = false
		fmt.Fprintf(w, "! a worker is polling task queue %q again (%s): %s goes on\n", runapi.TaskQueue, strings.Join(live, ", "), ws.what)
	}
}

// saying reports whether it said no worker polls, and has not yet said
// that one does again.
func (ws *workers) saying() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.said
}

// watch checks every second until ctx ends, in the background; stop
// waits for it to finish.
func (ws *workers) watch(ctx context.Context, w io.Writer) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				ws.check(ctx, w)
			}
		}
	}()
	return func() { cancel(); <-done }
}

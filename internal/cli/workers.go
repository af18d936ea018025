package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/health"
	"github.com/tether-run/tether/internal/runapi"
)

// healthTTL is how long one look at Temporal and the workers serves: the
// console asks for every page, and what is down changes by the second.
const healthTTL = 2 * time.Second

// health says whether Temporal answers and a worker polls the task
// queue; with run, an open run's state query settles it (health.Probe):
// the pollers alone cannot tell a worker that stopped a minute ago. A
// report younger than healthTTL serves again.
func (a *app) health(ctx context.Context, run string) health.Report {
	a.healthMu.Lock()
	rep := a.healthLast
	a.healthMu.Unlock()
	fresh := time.Since(rep.At) < healthTTL
	if !fresh {
		c, err := a.temporal()
		if err != nil {
			return health.Report{Address: a.cfg.TemporalAddress, Queue: runapi.TaskQueue, Temporal: errors.New(rootCause(err)), At: time.Now()}
		}
		rep = health.Check(ctx, c, a.cfg.TemporalAddress, runapi.TaskQueue)
	}
	if run != "" && rep.Workers != health.WorkersDown && !(fresh && rep.Probed()) {
		// A poll seconds ago proves little: the worker may have stopped
		// since. The run's query proves it (and serves for healthTTL).
		_ = rep.Probe(ctx, run, func(qctx context.Context) error {
			_, err := a.queryState(qctx, run)
			return err
		})
	}
	if !fresh || (run != "" && rep.Probed()) {
		a.healthMu.Lock()
		a.healthLast = rep
		a.healthMu.Unlock()
	}
	return rep
}

// noWorkerGrace is how long a command waits for a worker before it says
// that none is polling: a run just started is taken within it.
const noWorkerGrace = time.Second

// workers is what a command knows about the workers polling the task
// queue: it says once when none is, and once when one is again.
type workers struct {
	a     *app
	run   string // the run whose query settles what the pollers cannot
	what  string // what waits for a worker: "the run", "the answer"
	since time.Time
	// busy, if set, reports that the run shows a worker at work itself
	// (its history grows): no need to ask, until "no worker" was said.
	busy func() bool
	// said is whether "no worker" was said and not yet taken back.
	said bool
	mu   sync.Mutex
}

func (a *app) workers(run, what string) *workers {
	return &workers{a: a, run: run, what: what, since: time.Now()}
}

// check says, on w, that no worker polls (once, after noWorkerGrace) or
// that one does again. Within health.LongPoll of a worker's last poll,
// the run's query tells (health.Probe): so a command says so within a
// few seconds, not the minute a stopped worker stays listed.
func (ws *workers) check(ctx context.Context, w io.Writer) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if time.Since(ws.since) < noWorkerGrace && !ws.said {
		return
	}
	if ws.busy != nil && !ws.said && ws.busy() {
		return
	}
	rep := ws.a.health(ctx, ws.run)
	switch {
	case rep.Temporal != nil:
		return // the command says so where it waits on Temporal
	case rep.NoCurrentBuild != "" && !ws.said:
		ws.said = true
		d := rep.NoCurrentBuild
		fmt.Fprintf(w, "! workers of deployment %s poll task queue %q, but the deployment has no current build, so none takes %s: make one current (temporal worker deployment set-current-version --deployment-name %s --build-id BUILD; tether workers lists them), or start a worker with TETHER_VERSIONING=auto; still waiting\n", d, runapi.TaskQueue, ws.what, d)
	case rep.Workers == health.WorkersDown && !ws.said:
		ws.said = true
		fmt.Fprintf(w, "! %s; %s waits until one starts (still waiting)\n", rep.String(), ws.what)
	case rep.Workers == health.WorkersUp && ws.said:
		ws.said = false
		fmt.Fprintf(w, "! a worker polls task queue %q again (%s): %s goes on\n", runapi.TaskQueue, strings.Join(rep.Pollers, ", "), ws.what)
	}
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

// lockedWriter lets a command's lines and its worker watch's interleave
// whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

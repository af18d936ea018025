package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// followTick is how often --follow looks at what no event announces: the
// running visits' progress (their heartbeats, at most every few seconds)
// and, while the run is quiet, whether a worker polls.
const followTick = time.Second

// follow prints new path steps and questions until the run closes. It
// waits on the run's history instead of polling it: a step or a question
// can only appear when a workflow task completes, so the run's state is
// queried then, once per batch of news; a running visit's progress, which
// no event carries, is read while a visit has been running a while. The
// run's result says the rest, so a completed run costs no query, which a
// worker would answer by replaying its whole history.
func (a *app) follow(ctx context.Context, id string) error {
	c, err := a.temporal()
	if err != nil {
		return failedErr(err)
	}
	run := c.GetWorkflow(ctx, id, "")
	done := make(chan error, 1)
	var result runapi.GraphRunResult
	go func() { done <- run.Get(ctx, &result) }()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	news := make(chan struct{}, 1)
	h := &historyWatch{news: news}
	go h.watch(wctx, c, a.cfg.Namespace, id)

	// Ctrl-C leaves the run going on, and says so.
	interrupted, stopSignals := signal.NotifyContext(ctx, os.Interrupt)
	defer stopSignals()
	// Lines of the run and of the worker watch interleave whole.
	out := &lockedWriter{w: a.out}
	ws := a.workers(id, "the run")
	// A history that grew within the last second shows a worker at work:
	// the watch asks Temporal and probes the run only while it is quiet.
	ws.busy = func() bool { quiet, _ := h.since(); return quiet < followTick }
	stopWorkers := ws.watch(ctx, out)
	defer stopWorkers()
	f := &follower{a: a, out: out, id: id, asked: map[string]bool{}, shown: map[string]string{}}
	tick := time.NewTicker(followTick)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			stopWorkers()
			return f.end(ctx, &result, err)
		case <-news:
			f.query(ctx)
		case <-tick.C:
			if _, running := h.since(); running >= followTick {
				f.progress(ctx)
			}
		case <-interrupted.Done():
			stopWorkers()
			if ctx.Err() == nil {
				fmt.Fprintf(a.out, "detached from run %s; it goes on without you. Follow it again with `tether status %s --follow`, stop it with `tether cancel %s`\n", id, id, id)
				return &exitError{code: ExitDetached, err: fmt.Errorf("detached from run %s", id)}
			}
			return ctx.Err()
		}
	}
}

// follower is what --follow has printed.
type follower struct {
	a       *app
	out     io.Writer // a.out, shared with the worker watch
	id      string
	printed int
	asked   map[string]bool
	// shown is the progress last printed per running visit.
	shown map[string]string
	last  *runapi.State
}

// query prints the steps and questions that are new in the run's state.
func (f *follower) query(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	st, err := f.a.queryState(qctx, f.id)
	if err != nil {
		return
	}
	f.last = st
	f.steps(st, st.Steps, st.Path)
	for _, q := range st.Questions {
		if !f.asked[q.ID] {
			f.asked[q.ID] = true
			fmt.Fprintf(f.out, "? %s asks [%s]: %s\n    answer: tether answer %s %s TEXT\n", q.Node, q.ID, q.Text, f.id, q.ID)
		}
	}
}

// steps prints the steps of path (the last of total) not printed yet.
func (f *follower) steps(st *runapi.State, total int, path []runstore.Step) {
	if fresh := total - f.printed; fresh > 0 {
		first := max(len(path)-fresh, 0)
		for _, s := range path[first:] {
			fmt.Fprintln(f.out, stepLine(st, s))
		}
		f.printed = total
	}
}

// progress prints the running visits' progress where it changed.
func (f *follower) progress(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	running, err := f.a.runningVisits(qctx, f.id)
	if err != nil {
		return
	}
	for _, p := range running {
		visit, key := fmt.Sprintf("%s/%d", p.Node, p.Visit), progressKey(p)
		if f.shown[visit] != key {
			f.shown[visit] = key
			fmt.Fprintf(f.out, "… %s\n", progressLine(p))
		}
	}
}

// end prints what is left of a run that closed, and how it ended. A
// completed run's result holds its last steps and what it cost; a run
// that failed, or whose worker's result does not say what each node cost,
// is asked for its state.
func (f *follower) end(ctx context.Context, result *runapi.GraphRunResult, err error) error {
	var st *runapi.State
	if err == nil && (result.NodeUsage != nil || result.Usage.IsZero()) {
		st = &runapi.State{RunID: f.id, Visits: result.NodeVisits, Usage: result.NodeUsage, TotalUsage: result.Usage}
		f.steps(st, result.Visits, result.Path)
	} else {
		f.query(ctx)
		st = f.last
	}
	var usage []string
	if st != nil {
		usage = nodeUsages(st)
	}
	for _, l := range usage {
		fmt.Fprintf(f.a.out, "usage: %s\n", l)
	}
	return f.a.finish(f.id, result, err, len(usage) == 0)
}

// historyWatch follows a run's history as it grows, through its
// continue-as-new executions, and says when a workflow task completed.
type historyWatch struct {
	news chan<- struct{}

	mu sync.Mutex
	// last is when the last event came; pending are the activities
	// scheduled and not closed, by scheduled event id, with when each was
	// seen.
	last    time.Time
	pending map[int64]time.Time
}

// watch long-polls the run's history, page by page, until ctx ends or the
// run closes for good. A page comes when events do (or after the
// server's long-poll interval, empty); a failed call is tried again with
// the same page.
func (h *historyWatch) watch(ctx context.Context, c client.Client, namespace, id string) {
	h.mu.Lock()
	h.last, h.pending = time.Now(), map[int64]time.Time{}
	h.mu.Unlock()
	req := &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace: namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id},
		WaitNewEvent: true, HistoryEventFilterType: enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT,
	}
	for ctx.Err() == nil {
		resp, err := c.WorkflowService().GetWorkflowExecutionHistory(ctx, req)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(followTick):
			}
			continue
		}
		next := ""
		for _, ev := range resp.GetHistory().GetEvents() {
			h.saw(ev)
			if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
		}
		switch {
		case next != "":
			// The run goes on in a new execution, from its first event.
			req.Execution.RunId, req.NextPageToken = next, nil
			h.mu.Lock()
			h.pending = map[int64]time.Time{}
			h.mu.Unlock()
		case len(resp.GetNextPageToken()) == 0:
			return // the run closed
		default:
			req.NextPageToken = resp.GetNextPageToken()
		}
	}
}

// saw takes in one event: a completed workflow task is news; activities
// are counted while they run.
func (h *historyWatch) saw(ev *historypb.HistoryEvent) {
	h.mu.Lock()
	now := time.Now()
	h.last = now
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		h.pending[ev.GetEventId()] = now
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		delete(h.pending, ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId())
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
		delete(h.pending, ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId())
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
		delete(h.pending, ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId())
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
		delete(h.pending, ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId())
	}
	h.mu.Unlock()
	if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
		select {
		case h.news <- struct{}{}:
		default: // news is waiting already; one query reads both
		}
	}
}

// since says how long the history has been quiet, and how long the
// oldest running activity has run (0: none runs).
func (h *historyWatch) since() (quiet, running time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if !h.last.IsZero() {
		quiet = now.Sub(h.last)
	}
	for _, t := range h.pending {
		running = max(running, now.Sub(t))
	}
	return quiet, running
}

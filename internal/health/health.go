// Package health says whether a run can make progress right now: whether
// Temporal answers, and whether a worker polls the task queue. `tether`'s
// commands and the console ask it before they wait on a run, so that a
// person is told at once what is down instead of waiting on a request
// that cannot be served.
//
// Temporal tells who polled a task queue and when each poll started, but
// not whether the poller is still there: a live worker's long poll lasts
// up to a minute, and a worker that stopped is listed for five. So the
// pollers alone prove a worker down only a minute after it left (no poll
// started since); within that minute, Probe asks a run a question that
// only a worker can answer (the state query), which a live worker answers
// in milliseconds.
package health

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// LongPoll is how long ago a live worker may have started its last poll:
// the server holds a poll for up to a minute (matching's long-poll
// expiration), and a worker asks again at once. A queue whose last poll
// started longer ago than this has no worker.
const LongPoll = 70 * time.Second

// checkWait bounds each question Check asks Temporal: a server that is up
// answers in milliseconds, and a person is waiting.
const checkWait = 2 * time.Second

// Workers is what is known of the task queue's workers.
type Workers int

const (
	// WorkersUp: a worker answered a run's query, or started a poll so
	// recently that it is still polling.
	WorkersUp Workers = iota
	// WorkersUnsure: a worker polled within LongPoll but nothing proved it
	// is still there (Probe would).
	WorkersUnsure
	// WorkersDown: no worker has polled within LongPoll, or one polled but
	// did not answer a run's query.
	WorkersDown
)

// Report is what Check (and Probe) found.
type Report struct {
	// Address and Queue are what was asked about.
	Address string
	Queue   string
	// Temporal is why Temporal did not answer; nil when it did.
	Temporal error
	Workers  Workers
	// LastPoll is when the latest poll of the queue started (zero: none in
	// the five minutes Temporal remembers); Pollers are the identities of
	// the workers that polled within LongPoll.
	LastPoll time.Time
	Pollers  []string
	// NoCurrentBuild names the worker deployment whose versioned workers
	// are the only ones polling, when it has no current build: a new run
	// then goes to none of them (a run already pinned to a build still
	// does).
	NoCurrentBuild string
	// Unanswered names the run whose query no worker answered (Probe),
	// Answered the one a worker did.
	Unanswered, Answered string
	// At is when the report was made.
	At time.Time
}

// recentPoll is how recently a poll must have started to prove a worker
// there without a probe: a worker busy with every slot polls less often,
// an idle one at least once a minute, so only a very recent poll proves.
const recentPoll = 5 * time.Second

// Check asks Temporal at address whether it answers and who polls queue
// for workflow tasks. It takes at most a few seconds, however Temporal
// fails. This is the one place that decides what a worker polling means;
// a build-aware (versioned) queue is asked here too.
func Check(ctx context.Context, c client.Client, address, queue string) Report {
	rep := Report{Address: address, Queue: queue, At: time.Now()}
	if c == nil {
		rep.Temporal = errors.New("no connection")
		return rep
	}
	hctx, cancel := context.WithTimeout(ctx, checkWait)
	defer cancel()
	// The health check is not retried by the client: a server that is
	// down fails it at once, where other calls retry until their deadline.
	if _, err := c.CheckHealth(hctx, &client.CheckHealthRequest{}); err != nil {
		rep.Temporal = cause(err)
		return rep
	}
	d, err := c.DescribeTaskQueue(hctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		rep.Temporal = cause(err)
		return rep
	}
	var versioned string
	var unversioned bool
	for _, p := range d.GetPollers() {
		t := p.GetLastAccessTime().AsTime()
		if t.After(rep.LastPoll) {
			rep.LastPoll = t
		}
		if rep.At.Sub(t) < LongPoll {
			rep.Pollers = append(rep.Pollers, p.GetIdentity())
			if p.GetDeploymentOptions().GetWorkerVersioningMode() == enumspb.WORKER_VERSIONING_MODE_VERSIONED {
				versioned = p.GetDeploymentOptions().GetDeploymentName()
			} else {
				unversioned = true
			}
		}
	}
	if versioned != "" && !unversioned && d.GetVersioningInfo().GetCurrentDeploymentVersion().GetBuildId() == "" {
		rep.NoCurrentBuild = versioned
	}
	slices.Sort(rep.Pollers)
	switch since := rep.At.Sub(rep.LastPoll); {
	case rep.LastPoll.IsZero() || since >= LongPoll:
		rep.Workers = WorkersDown
	case since < recentPoll:
		rep.Workers = WorkersUp
	default:
		rep.Workers = WorkersUnsure
	}
	return rep
}

// Query is a run's state query, for Probe: the caller's own, so that
// the answer serves it too.
type Query func(ctx context.Context) error

// ProbeWait is how long Probe lets a worker take to answer a query: a
// live worker answers a run it holds in milliseconds. A worker slower
// than this (one replaying a long run on a loaded machine) is taken for
// absent for a moment: a page says so until the next look, and an answer
// sent then is queued in the run's history rather than lost; a person
// answering is never kept waiting for a second.
const ProbeWait = 800 * time.Millisecond

// Probe settles an unsure report with query, a run's state query bounded
// by ProbeWait: answered, a worker is up; not answered in time (or
// Temporal says no poller was seen lately), none is. Any other error of
// the query (the run is closed, its code failed) says nothing about the
// workers and leaves the report as it was. It returns the query's error.
func (rep *Report) Probe(ctx context.Context, run string, query Query) error {
	qctx, cancel := context.WithTimeout(ctx, ProbeWait)
	defer cancel()
	err := query(qctx)
	switch {
	case err == nil:
		rep.Workers, rep.Unanswered, rep.Answered = WorkersUp, "", run
	case NoWorker(err) || qctx.Err() != nil:
		rep.Workers, rep.Unanswered, rep.Answered = WorkersDown, run, ""
	}
	return err
}

// NoWorker says err is Temporal's "no poller seen for task queue
// recently": a query no worker could take.
func NoWorker(err error) bool {
	var fp *serviceerror.FailedPrecondition
	return errors.As(err, &fp) || status.Code(err) == codes.FailedPrecondition
}

// Probed says a run's query settled the report (Probe).
func (rep Report) Probed() bool { return rep.Answered != "" || rep.Unanswered != "" }

// Down says the run cannot make progress now: Temporal does not answer
// or no worker takes its tasks.
func (rep Report) Down() bool { return rep.Temporal != nil || rep.Workers == WorkersDown }

// String is what is down, and what to do, in one line; "" when nothing is
// known to be down.
func (rep Report) String() string {
	switch {
	case rep.Temporal != nil:
		return fmt.Sprintf("Temporal is unreachable at %s (%v): start it (`make run` starts a dev server) or set TEMPORAL_ADDRESS", rep.Address, rep.Temporal)
	case rep.Workers != WorkersDown:
		return ""
	case rep.LastPoll.IsZero():
		return fmt.Sprintf("no worker has polled task queue %q in the last 5 min: start tether-worker", rep.Queue)
	case rep.Unanswered != "" && rep.At.Sub(rep.LastPoll) < LongPoll:
		return fmt.Sprintf("no worker answered run %s (the last poll of task queue %q started %s ago): start tether-worker", rep.Unanswered, rep.Queue, Since(rep.At.Sub(rep.LastPoll)))
	}
	return fmt.Sprintf("no worker has polled task queue %q for %s: start tether-worker", rep.Queue, Since(rep.At.Sub(rep.LastPoll)))
}

// Since is a duration as a person reads it: 12 s, 2 min, 3 h.
func Since(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	default:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
}

// cause is the innermost message of a gRPC failure: "dial tcp
// 127.0.0.1:7233: connect: connection refused" rather than the
// transport's whole envelope.
func cause(err error) error {
	msg := err.Error()
	if st, ok := status.FromError(err); ok && st.Message() != "" {
		msg = st.Message()
	}
	if i := strings.Index(msg, "dial tcp "); i >= 0 {
		msg = strings.TrimRight(msg[i:], `"`)
	}
	return errors.New(msg)
}

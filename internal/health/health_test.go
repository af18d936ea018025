package health

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/api/serviceerror"
)

// What a report says is down, and what to do: Temporal first, then no
// worker, named by how long ago the last poll was, or by the run that no
// worker answered.
func TestReportSaysWhatIsDown(t *testing.T) {
	now := time.Now()
	rep := Report{Address: "127.0.0.1:7233", Queue: "tether", At: now, Temporal: errors.New("connection refused")}
	assert.True(t, rep.Down())
	assert.Equal(t, "Temporal is unreachable at 127.0.0.1:7233 (connection refused): start it (`make run` starts a dev server) or set TEMPORAL_ADDRESS", rep.String())

	rep = Report{Queue: "tether", At: now, Workers: WorkersDown}
	assert.Equal(t, `no worker has polled task queue "tether" in the last 5 min: start tether-worker`, rep.String())
	rep.LastPoll = now.Add(-2*time.Minute - 5*time.Second)
	assert.Equal(t, `no worker has polled task queue "tether" for 2 min: start tether-worker`, rep.String())
	rep.LastPoll, rep.Unanswered = now.Add(-12*time.Second), "r1"
	assert.Equal(t, `no worker answered run r1 (the last poll of task queue "tether" started 12 s ago): start tether-worker`, rep.String())

	for _, w := range []Workers{WorkersUp, WorkersUnsure} {
		rep := Report{Queue: "tether", At: now, Workers: w}
		assert.False(t, rep.Down())
		assert.Empty(t, rep.String(), "nothing known down")
	}
}

// A probe settles an unsure report: an answer is a worker; a query that
// times out, or that Temporal refuses for want of a poller, is none; any
// other failure says nothing of the workers.
func TestProbeSettlesAnUnsureReport(t *testing.T) {
	for _, tc := range []struct {
		name  string
		query Query
		want  Workers
	}{
		{"answered", func(context.Context) error { return nil }, WorkersUp},
		{"no poller", func(context.Context) error {
			return serviceerror.NewFailedPrecondition("no poller seen for task queue recently, worker may be down")
		}, WorkersDown},
		{"timed out", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, WorkersDown},
		{"the run's own failure", func(context.Context) error { return errors.New("query handler panicked") }, WorkersUnsure},
	} {
		rep := Report{Queue: "tether", Workers: WorkersUnsure, LastPoll: time.Now().Add(-20 * time.Second), At: time.Now()}
		_ = rep.Probe(context.Background(), "r1", tc.query)
		assert.Equal(t, tc.want, rep.Workers, tc.name)
		if tc.want == WorkersDown {
			assert.Equal(t, "r1", rep.Unanswered, tc.name)
		}
	}
}

package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/runapi"
)

// Open is how the server held a number of open runs, each waiting for a
// person: how fast they started, how long until every one said it waits,
// how long an answer to one of them then took to finish it, and what the
// server holds.
type Open struct {
	Runs int
	// StartPerSec is the rate the runs of this step were started at (16
	// starters at once); Waiting how long from the first start until
	// every run so far was listed as waiting.
	StartPerSec float64
	Waiting     time.Duration
	// Answered are the times from an answer to its run's close, for a
	// sample of the runs.
	AnswerP50, AnswerMax time.Duration
	// Errors counts starts and answers the server refused or timed out.
	Errors int
	// RSS and DB are the dev server's resident memory and database size
	// (zero on a cluster).
	RSS, DB int64
}

// OpenRuns opens runs that wait for a person until counts[i] are open,
// for each count in turn, and measures each step (Open); dev is the dev
// server whose memory and database it reports (nil on a cluster). The
// runs stay open until the end, then are terminated.
func (s *Soak) OpenRuns(ctx context.Context, counts []int, dev *DevServer) ([]Open, error) {
	g := graphFile("soak-open", graphData{})
	var ids []string
	defer func() {
		s.logf("terminating the %d open runs", len(ids))
		s.each(context.WithoutCancel(ctx), ids, func(ctx context.Context, id string) error {
			return s.c.TerminateWorkflow(ctx, id, "", "soak: open runs measured")
		})
	}()
	var out []Open
	// notStarted are the runs the server refused to start; answered those
	// the steps before answered, which wait no more.
	notStarted, answered := 0, 0
	const sample = 20
	for _, n := range counts {
		if n <= len(ids) {
			continue
		}
		o := Open{Runs: n}
		batch := make([]string, 0, n-len(ids))
		for i := len(ids); i < n; i++ {
			batch = append(batch, fmt.Sprintf("%s-open-%d", s.prefix, i))
		}
		started := time.Now()
		refused := s.each(ctx, batch, func(ctx context.Context, id string) error {
			_, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
				runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g})
			return err
		})
		o.Errors += refused
		notStarted += refused
		o.StartPerSec = float64(len(batch)) / time.Since(started).Seconds()
		ids = append(ids, batch...)
		for {
			waiting, err := s.countWaiting(ctx)
			if err == nil && waiting >= len(ids)-notStarted-answered {
				break
			}
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			time.Sleep(500 * time.Millisecond)
		}
		o.Waiting = time.Since(started)
		o.AnswerP50, o.AnswerMax, o.Errors = s.answerSample(ctx, batch, sample, o.Errors)
		answered += min(sample, len(batch))
		if dev != nil {
			o.RSS, o.DB = dev.Stats()
		}
		s.logf("%6d open runs: started at %.0f/s, all waiting after %s; an answer finished its run in %s (p50; worst %s); %d errors; server RSS %d MiB, database %d MiB",
			n, o.StartPerSec, o.Waiting.Round(time.Millisecond), ms(o.AnswerP50), ms(o.AnswerMax), o.Errors, o.RSS>>20, o.DB>>20)
		out = append(out, o)
	}
	return out, nil
}

// answerSample answers k runs of batch (each then closes) one after
// another and returns the median and the worst time from answer to close.
func (s *Soak) answerSample(ctx context.Context, batch []string, k, errs int) (p50, worst time.Duration, errors int) {
	var lat []time.Duration
	for _, i := range rand.Perm(len(batch))[:min(k, len(batch))] {
		id := batch[i]
		start := time.Now()
		h, err := s.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: id, UpdateName: runapi.UpdateAnswer, WaitForStage: client.WorkflowUpdateStageCompleted,
			Args: []any{runapi.Answer{QuestionID: "ask-1", Text: "yes"}},
		})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		if err == nil {
			err = s.c.GetWorkflow(ctx, id, "").Get(ctx, nil)
		}
		if err != nil {
			errs++
			continue
		}
		lat = append(lat, time.Since(start))
	}
	lat = sortDurations(lat)
	if len(lat) == 0 {
		return 0, 0, errs
	}
	return percentile(lat, 50), lat[len(lat)-1], errs
}

// countWaiting counts the soak's runs Temporal lists as waiting.
func (s *Soak) countWaiting(ctx context.Context) (int, error) {
	resp, err := s.c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Query: fmt.Sprintf(`TetherStatus = "waiting" AND ExecutionStatus = "Running" AND WorkflowId STARTS_WITH %q`, s.prefix),
	})
	if err != nil {
		return 0, err
	}
	return int(resp.GetCount()), nil
}

// each calls fn for every id, 16 at a time, each call bounded by 30 s,
// and returns how many failed.
func (s *Soak) each(ctx context.Context, ids []string, fn func(context.Context, string) error) int {
	var failed atomic.Int64
	work := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				if err := fn(cctx, id); err != nil {
					failed.Add(1)
				}
				cancel()
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	return int(failed.Load())
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

package soak

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/runapi"
)

// LostWorker is what a worker killed in the middle of a visit cost: from
// the kill to the visit starting again on another worker, and to the run's
// end, with the heartbeat timeout the run used.
type LostWorker struct {
	Heartbeat time.Duration
	Restarted []time.Duration
	Done      []time.Duration
}

// LostWorker measures, samples times: a tool visit of `sleep 4` with a 5 s
// heartbeat timeout; one second into it, its worker is killed with
// SIGKILL and started again at once with empty disks; how long until the
// visit runs again elsewhere, and until the run is done.
func (s *Soak) LostWorker(ctx context.Context, samples int) (*LostWorker, error) {
	const heartbeat = 5 * time.Second
	g := graphFile("soak-lost", graphData{})
	out := &LostWorker{Heartbeat: heartbeat}
	for i := range samples {
		id := fmt.Sprintf("%s-lost-%d", s.prefix, i)
		h, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
			runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Options: runapi.Options{HeartbeatTimeout: heartbeat}})
		if err != nil {
			return nil, err
		}
		worker, first, err := s.visitWorker(ctx, id, visitAttempt{})
		if err != nil {
			return nil, err
		}
		time.Sleep(time.Second)
		n := strings.TrimPrefix(worker, "cluster-w")
		killed := time.Now()
		if err := s.cluster(ctx, "worker", "kill", n); err != nil {
			return nil, err
		}
		if err := s.cluster(ctx, "worker", "wipe", n); err != nil {
			return nil, err
		}
		if err := s.cluster(ctx, "worker", "start", n); err != nil {
			return nil, err
		}
		if _, _, err := s.visitWorker(ctx, id, first); err != nil {
			return nil, err
		}
		restarted := time.Since(killed)
		if err := h.Get(ctx, nil); err != nil {
			return nil, fmt.Errorf("lost-worker run %s: %w", id, err)
		}
		done := time.Since(killed)
		out.Restarted = append(out.Restarted, restarted)
		out.Done = append(out.Done, done)
		s.logf("lost worker %s: visit started again after %s, run done after %s (heartbeat timeout %s)", worker, ms(restarted), ms(done), heartbeat)
		if _, err := s.tether(ctx, "delete", id); err != nil {
			return nil, err
		}
	}
	slices.Sort(out.Restarted)
	slices.Sort(out.Done)
	return out, nil
}

// visitWorker waits until a visit of the run has started on a worker,
// other than the attempt not names (zero: any), and names the worker and
// the attempt. The server starts a lost visit again as the same activity's
// next attempt; runs before that did it as a new activity.
func (s *Soak) visitWorker(ctx context.Context, id string, not visitAttempt) (worker string, got visitAttempt, err error) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		d, err := s.c.DescribeWorkflow(ctx, id, "")
		if err == nil {
			for _, p := range d.RawResponse.GetPendingActivities() {
				at := visitAttempt{activity: p.GetActivityId(), attempt: p.GetAttempt()}
				if p.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && at != not {
					return p.GetLastWorkerIdentity(), at, nil
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", visitAttempt{}, fmt.Errorf("run %s: no new visit started within 2 minutes", id)
}

// visitAttempt names one attempt of one visit's activity.
type visitAttempt struct {
	activity string
	attempt  int32
}

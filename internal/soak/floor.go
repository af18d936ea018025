package soak

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// floorQueue is the task queue of the floor's own workflow and worker.
const floorQueue = "tether-soak-floor"

// FloorRun is the cluster's floor: a workflow of steps regular activities
// that do nothing, one after another, each through the server's matching
// as a Tether visit is. It returns each step's latency as the workflow saw
// it (scheduled to completed), the figure a Tether run's path records for
// its visits.
func FloorRun(ctx workflow.Context, steps int) ([]time.Duration, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
	})
	out := make([]time.Duration, 0, steps)
	for range steps {
		start := workflow.Now(ctx)
		if err := workflow.ExecuteActivity(actx, Nothing).Get(ctx, nil); err != nil {
			return nil, err
		}
		out = append(out, workflow.Now(ctx).Sub(start))
	}
	return out, nil
}

// Nothing is the floor's activity.
func Nothing(context.Context) error { return nil }

// startFloorWorker runs the floor's worker in this process with as many
// activity slots as the cluster's Tether workers have together.
func startFloorWorker(c client.Client, slots int) (worker.Worker, error) {
	w := worker.New(c, floorQueue, worker.Options{
		MaxConcurrentActivityExecutionSize:     slots,
		MaxConcurrentWorkflowTaskExecutionSize: slots,
	})
	w.RegisterWorkflow(FloorRun)
	w.RegisterActivity(Nothing)
	return w, w.Start()
}

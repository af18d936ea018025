package telemetry_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/testenv"
)

// With no workflow cache every workflow task replays the whole history,
// so each test here also proves that a replay neither repeats a span nor
// counts a stop twice.
func TestMain(m *testing.M) {
	worker.SetStickyWorkflowCacheSize(0)
	os.Exit(m.Run())
}

// secret is text that must never reach a span: the probe puts it in its
// prompt, its output and its first attempt's error message.
const secret = "PROMPT-TEXT-7f3a9c-never-in-a-span"

type probeInput struct {
	Run, Node, Prompt string
}

// probeWorkflow counts a fail-stop and a budget stop, then runs one visit
// whose first attempt fails.
func probeWorkflow(ctx workflow.Context, in probeInput) (string, error) {
	telemetry.WorkflowFailStop(ctx)
	telemetry.WorkflowBudgetStop(ctx)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 10 * time.Millisecond, MaximumAttempts: 2},
	})
	var out string
	err := workflow.ExecuteActivity(ctx, "ProbeVisit", in).Get(ctx, &out)
	return out, err
}

// probe is an activity that does what Tether's visit activities do with
// telemetry: a visit span, a session learnt during the visit, metrics.
type probe struct{ metrics *telemetry.Metrics }

func (p *probe) ProbeVisit(ctx context.Context, in probeInput) (string, error) {
	attempt := int(activity.GetInfo(ctx).Attempt)
	start := time.Now()
	ctx, end := telemetry.StartVisit(ctx, telemetry.VisitAttrs{
		Run: in.Run, Node: in.Node, Visit: attempt, Kind: "agent", Backend: "scripted", Session: graph.SessionPersist,
	})
	telemetry.SetVisitSession(ctx, fmt.Sprintf("sess-%d", attempt))
	if attempt == 1 {
		err := fmt.Errorf("the agent answered %q and stopped", in.Prompt)
		end(err)
		p.metrics.Visit("scripted", "agent", telemetry.OutcomeFailed, time.Since(start))
		return "", err
	}
	p.metrics.RestoreBytes(telemetry.WhatSession, 1234)
	p.metrics.PackBytes(telemetry.WhatWorkspace, 567)
	end(nil)
	p.metrics.Visit("scripted", "agent", telemetry.OutcomeOK, time.Since(start))
	return "reply to " + in.Prompt, nil
}

// runProbe runs probeWorkflow once on a real dev server, with a client and
// a worker set up as tether-worker sets them up from tel.
func runProbe(t *testing.T, tel *telemetry.Telemetry, runID string) {
	t.Helper()
	srv := testenv.DevServer(t)
	c, err := client.Dial(client.Options{
		HostPort: srv.Address, Namespace: "default", Logger: log.NewStructuredLogger(testLogger()),
		Interceptors: tel.ClientInterceptors(), MetricsHandler: tel.MetricsHandler(),
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	queue := "probe-" + runID
	w := worker.New(c, queue, worker.Options{Interceptors: tel.WorkerInterceptors()})
	w.RegisterWorkflowWithOptions(probeWorkflow, workflow.RegisterOptions{Name: "probe"})
	w.RegisterActivityWithOptions((&probe{metrics: tel.Metrics()}).ProbeVisit, activity.RegisterOptions{Name: "ProbeVisit"})
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: runID, TaskQueue: queue}, "probe",
		probeInput{Run: runID, Node: "writer", Prompt: secret})
	require.NoError(t, err)
	var out string
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, "reply to "+secret, out)
}

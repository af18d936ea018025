package workerhost_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/internal/workerhost"
)

// TestGraphRunIsTraced runs a one-node scripted graph through a worker
// that workerhost started with telemetry, on a real dev server: GraphRun
// and its activities are traced in one trace under the client's start,
// and neither the node's prompt nor the agent's reply is in any span.
func TestGraphRunIsTraced(t *testing.T) {
	const prompt, reply = "PROMPT-b81e-write-the-plan", "REPLY-c44d-here-is-the-plan"
	srv := testenv.DevServer(t)
	spans := tracetest.NewInMemoryExporter()
	tel, err := telemetry.Setup(t.Context(), telemetry.Options{SpanExporter: spans})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	logger := slog.New(slog.DiscardHandler)
	c, err := client.Dial(client.Options{
		HostPort: srv.Address, Namespace: "default", Logger: log.NewStructuredLogger(logger),
		Interceptors: tel.ClientInterceptors(), MetricsHandler: tel.MetricsHandler(),
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	startHost(t, c, workerhost.Options{ID: "traced", Logger: logger, Interceptors: tel.WorkerInterceptors()})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	run := startRun(ctx, t, c, "traced-run", fmt.Sprintf(`
name: traced
start: writer
nodes:
  - {id: writer, kind: agent, backend: scripted, session: persist, prompt: %s, script: [%s]}
  - {id: done, kind: end}
edges:
  - {from: writer, to: done}
`, prompt, reply))
	var res runapi.GraphRunResult
	require.NoError(t, run.Get(ctx, &res))
	require.Contains(t, fmt.Sprint(res.Output), reply, "the run went through the agent")

	got := spans.GetSpans()
	count := map[string]int{}
	for _, s := range got {
		count[s.Name]++
		assert.Equal(t, got[0].SpanContext.TraceID(), s.SpanContext.TraceID(), "span %s is in the run's trace", s.Name)
		var text strings.Builder
		fmt.Fprintln(&text, s.Name, s.Status.Description)
		for _, kv := range s.Attributes {
			fmt.Fprintln(&text, kv.Key, kv.Value.String())
		}
		for _, e := range s.Events {
			fmt.Fprintln(&text, e.Name, e.Attributes)
		}
		assert.NotContains(t, text.String(), prompt, "span %s", s.Name)
		assert.NotContains(t, text.String(), reply, "span %s", s.Name)
	}
	assert.Equal(t, 1, count["StartWorkflow:GraphRun"], "spans: %v", count)
	assert.NotZero(t, count["RunWorkflow:GraphRun"], "spans: %v", count)
	assert.Equal(t, 1, count["RunActivity:Visit"], "one visit, traced once: %v", count)
	assert.Equal(t, count["StartActivity:Visit"], count["RunActivity:Visit"], "spans: %v", count)
	assert.Equal(t, 1, count["tether.visit"], "Tether's own visit span: %v", count)
	// The visit's parts are its children: a persist agent runs and packs
	// its session, in a workspace it restores and snapshots.
	var visit tracetest.SpanStub
	for _, s := range got {
		if s.Name == telemetry.VisitSpanName {
			visit = s
		}
	}
	for _, phase := range []string{telemetry.PhaseRestoreWorkspace, telemetry.PhaseRun, telemetry.PhasePack, telemetry.PhaseSnapshot} {
		assert.Equal(t, 1, count[phase], "phase %s: %v", phase, count)
		for _, s := range got {
			if s.Name == phase {
				assert.Equal(t, visit.SpanContext.SpanID(), s.Parent.SpanID(), "%s is a part of the visit", phase)
				assert.False(t, s.StartTime.Before(visit.StartTime) || s.EndTime.After(visit.EndTime), "%s lies inside the visit", phase)
			}
		}
	}
	assert.Zero(t, count[telemetry.PhaseRestoreSession], "a first visit restores no session: %v", count)
}

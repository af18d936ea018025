package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/telemetry/telemetrytest"
	"github.com/tether-run/tether/internal/testenv"
)

// TestWorkerTelemetryFromEnv runs the tether-worker binary with
// TETHER_METRICS_ADDR and OTEL_EXPORTER_OTLP_ENDPOINT set, against a real
// dev server: it serves the SDK's metrics for the run it executed, and
// on SIGTERM it sends the run's spans, which its batcher would otherwise
// have held for ten minutes, to the OTLP endpoint before it exits.
func TestWorkerTelemetryFromEnv(t *testing.T) {
	srv := testenv.DevServer(t)
	spans := telemetrytest.HTTP(t)

	bin := buildWorker(t, t.TempDir())
	w, logged := startWorker(t, bin, srv, "telemetry", regexp.MustCompile(`url=(http://\S+/metrics)`),
		"TETHER_BLOB_URL=file://"+filepath.Join(t.TempDir(), "store"),
		"TETHER_METRICS_ADDR=127.0.0.1:0",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+spans.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_SERVICE_NAME=",
		"OTEL_BSP_SCHEDULE_DELAY=600000",
	)
	metricsURL := logged[1]

	g, err := graph.Parse([]byte(`
name: env
start: writer
nodes:
  - {id: writer, kind: agent, backend: scripted, prompt: go, script: [done]}
  - {id: end, kind: end}
edges:
  - {from: writer, to: end}
`), "env.yaml")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	run, err := srv.Client(t).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "env-run", TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: "env-run", Graph: g})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))

	require.Eventually(t, func() bool {
		resp, err := http.Get(metricsURL)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return regexp.MustCompile(`(?m)^temporal_workflow_completed\{[^}]*workflow_type="GraphRun"[^}]*\} 1$`).Match(body)
	}, time.Minute, 50*time.Millisecond, "/metrics never counted the completed GraphRun")
	assert.Empty(t, spans.Spans(), "the batcher holds the spans until shutdown")

	w.stop(t)
	got := spans.Spans()
	assert.Equal(t, "tether-worker", got["RunActivity:Visit"], "spans received: %v", got)
	assert.Equal(t, "tether-worker", got["RunWorkflow:GraphRun"], "spans received: %v", got)
}

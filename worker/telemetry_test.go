package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
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

	bin := filepath.Join(t.TempDir(), "tether-worker")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	dir := t.TempDir()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"TEMPORAL_ADDRESS="+srv.Address,
		"TETHER_BLOB_URL=file://"+filepath.Join(dir, "store"),
		"TETHER_STATE_DIR="+filepath.Join(dir, "state"),
		"TETHER_WORK_DIR="+filepath.Join(dir, "work"),
		"TETHER_WORKER_ID=telemetry",
		"TETHER_METRICS_ADDR=127.0.0.1:0",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+spans.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_SERVICE_NAME=",
		"OTEL_BSP_SCHEDULE_DELAY=600000",
	)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	logged := make(chan string, 1)
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		url := regexp.MustCompile(`url=(http://\S+/metrics)`)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := url.FindStringSubmatch(sc.Text()); m != nil {
				logged <- m[1]
			}
		}
	}()
	defer func() {
		if t.Failed() {
			logMu.Lock()
			t.Logf("worker log:\n%s", log.String())
			logMu.Unlock()
		}
	}()
	var metricsURL string
	select {
	case metricsURL = <-logged:
	case <-time.After(2 * time.Minute):
		t.Fatal("the worker never logged its metrics address")
	}

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

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	got := spans.Spans()
	assert.Equal(t, "tether-worker", got["RunActivity:Visit"], "spans received: %v", got)
	assert.Equal(t, "tether-worker", got["RunWorkflow:GraphRun"], "spans received: %v", got)
}

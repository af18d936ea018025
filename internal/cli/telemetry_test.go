package cli

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/telemetry/telemetrytest"
	"github.com/tether-run/tether/internal/testenv"
)

// TestRunStartsTheTrace: with OTEL_EXPORTER_OTLP_ENDPOINT set, `tether run`
// exports its StartWorkflow span as service "tether" and hands the trace
// to the workflow in its start header; without it, the start carries no
// trace.
func TestRunStartsTheTrace(t *testing.T) {
	srv := testenv.DevServer(t)
	spans := telemetrytest.HTTP(t)

	dir := t.TempDir()
	const file = "testdata/hello.yaml"
	t.Setenv("TEMPORAL_ADDRESS", srv.Address)
	t.Setenv("TETHER_BLOB_URL", "file://"+filepath.Join(dir, "store"))
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")

	traceHeader := func(id string) bool {
		t.Helper()
		it := srv.Client(t).GetWorkflowHistory(t.Context(), id, "", false, 0)
		require.True(t, it.HasNext())
		ev, err := it.Next()
		require.NoError(t, err)
		_, ok := ev.GetWorkflowExecutionStartedEventAttributes().GetHeader().GetFields()["_tracer-data"]
		return ok
	}
	run := func(id string) {
		t.Helper()
		var out, errOut bytes.Buffer
		require.Equal(t, ExitOK, Main([]string{"run", file, "--id", id}, &out, &errOut), "%s%s", &out, &errOut)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	run("untraced")
	assert.False(t, traceHeader("untraced"))

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", spans.URL)
	run("traced")
	assert.True(t, traceHeader("traced"))
	assert.Equal(t, map[string]string{"StartWorkflow:GraphRun": "tether"}, spans.Spans())
}

package telemetry_test

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tether-run/tether/internal/telemetry"
)

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// TestSpansThroughDevServer runs a workflow and an activity that opens a
// visit span on a real dev server and checks the trace: one trace from the
// client's start down to each visit, no start or activity attempt traced
// twice, the visit span under its activity's span with its attributes,
// and the prompt, output and error text nowhere in any span.
func TestSpansThroughDevServer(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tel, err := telemetry.Setup(t.Context(), telemetry.Options{SpanExporter: spans, Logger: testLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tel.Shutdown(t.Context()) })

	runProbe(t, tel, "trace-run")
	// Each span is exported as it ends (Shutdown would empty the exporter).
	got := spans.GetSpans()

	byName := map[string][]tracetest.SpanStub{}
	for _, s := range got {
		byName[s.Name] = append(byName[s.Name], s)
	}
	one := func(name string) tracetest.SpanStub {
		t.Helper()
		require.Len(t, byName[name], 1, "spans named %s among %v", name, names(got))
		return byName[name][0]
	}
	start, startAct := one("StartWorkflow:probe"), one("StartActivity:ProbeVisit")
	// The SDK opens a RunWorkflow span each time a worker rebuilds the
	// workflow from its history (here: every workflow task), all children
	// of the start.
	require.NotEmpty(t, byName["RunWorkflow:probe"])
	workflowSpans := map[trace.SpanID]bool{}
	for _, s := range byName["RunWorkflow:probe"] {
		assert.Equal(t, start.SpanContext.SpanID(), s.Parent.SpanID())
		workflowSpans[s.SpanContext.SpanID()] = true
	}
	require.Len(t, byName["RunActivity:ProbeVisit"], 2, "one activity span per attempt: %v", names(got))
	require.Len(t, byName[telemetry.VisitSpanName], 2, "one visit span per attempt: %v", names(got))

	// One trace, from the client's start down to each visit.
	for _, s := range got {
		assert.Equal(t, start.SpanContext.TraceID(), s.SpanContext.TraceID(), "span %s is in the run's trace", s.Name)
	}
	assert.Equal(t, trace.SpanKindClient, start.SpanKind)
	assert.True(t, workflowSpans[startAct.Parent.SpanID()], "the activity was started under a RunWorkflow span")
	activitySpans := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range byName["RunActivity:ProbeVisit"] {
		assert.Equal(t, startAct.SpanContext.SpanID(), s.Parent.SpanID())
		activitySpans[s.SpanContext.SpanID()] = s
	}

	for _, v := range byName[telemetry.VisitSpanName] {
		parent, ok := activitySpans[v.Parent.SpanID()]
		require.True(t, ok, "the visit span's parent is an activity span, not %s", v.Parent.SpanID())
		attrs := attrMap(v.Attributes)
		visit := attrs[telemetry.AttrVisit].AsInt64()
		assert.Equal(t, "trace-run", attrs[telemetry.AttrRun].AsString())
		assert.Equal(t, "writer", attrs[telemetry.AttrNode].AsString())
		assert.Equal(t, "agent", attrs[telemetry.AttrKind].AsString())
		assert.Equal(t, "scripted", attrs[telemetry.AttrBackend].AsString())
		assert.Equal(t, "persist", attrs[telemetry.AttrSession].AsString())
		assert.Equal(t, fmt.Sprintf("sess-%d", visit), attrs[telemetry.AttrSessionID].AsString())
		assert.Equal(t, "tether-worker", serviceName(v))
		if visit == 1 {
			// The first attempt failed: the visit span and the
			// activity's span both say so, by error type only.
			assert.Equal(t, codes.Error, v.Status.Code)
			assert.Equal(t, "*errors.errorString", attrs["error.type"].AsString())
			assert.Equal(t, codes.Error, parent.Status.Code)
			assert.NotEmpty(t, attrMap(parent.Attributes)["error.type"].AsString())
		} else {
			assert.Equal(t, int64(2), visit)
			assert.Equal(t, codes.Unset, v.Status.Code)
		}
	}

	for _, s := range got {
		assert.NotContains(t, spanText(s), secret, "span %s carries prompt, output or error text", s.Name)
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func attrMap(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

func serviceName(s tracetest.SpanStub) string {
	v, _ := s.Resource.Set().Value("service.name")
	return v.AsString()
}

// spanText is everything a span exports as text: its name, status,
// attributes, events and links.
func spanText(s tracetest.SpanStub) string {
	var b strings.Builder
	fmt.Fprintln(&b, s.Name, s.Status.Description)
	kvs := append([]attribute.KeyValue{}, s.Attributes...)
	for _, e := range s.Events {
		fmt.Fprintln(&b, e.Name)
		kvs = append(kvs, e.Attributes...)
	}
	for _, l := range s.Links {
		kvs = append(kvs, l.Attributes...)
	}
	for _, kv := range kvs {
		fmt.Fprintln(&b, kv.Key, kv.Value.String())
	}
	return b.String()
}

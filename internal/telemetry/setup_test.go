package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/telemetry/telemetrytest"
	"github.com/tether-run/tether/internal/testenv"
)

// TestOffByDefault: with nothing asked for there is nothing to install,
// no port is taken, and every call the activities and the worker make
// is safe.
func TestOffByDefault(t *testing.T) {
	for name, tel := range map[string]*Telemetry{"nil": nil, "zero options": mustSetup(t, Options{})} {
		t.Run(name, func(t *testing.T) {
			assert.Nil(t, tel.ClientInterceptors())
			assert.Nil(t, tel.WorkerInterceptors())
			assert.Nil(t, tel.MetricsHandler())
			assert.Nil(t, tel.Metrics())
			assert.Empty(t, tel.MetricsAddr())
			var m *Metrics = tel.Metrics()
			m.Visit("scripted", "agent", OutcomeOK, time.Second)
			m.RestoreBytes(WhatSession, 1)
			m.PackBytes(WhatWorkspace, 1)
			assert.NoError(t, tel.Shutdown(t.Context()))
		})
	}
}

// TestStartVisitCostsNothingWhenOff: without a span in ctx, a visit span
// is neither made nor allocated.
func TestStartVisitCostsNothingWhenOff(t *testing.T) {
	ctx := context.Background()
	a := VisitAttrs{Run: "r", Node: "n", Visit: 1, Backend: "scripted", SessionID: "s"}
	allocs := testing.AllocsPerRun(100, func() {
		vctx, end := StartVisit(ctx, a)
		SetVisitSession(vctx, "s2")
		end(nil)
	})
	assert.Zero(t, allocs)
	vctx, _ := StartVisit(ctx, a)
	assert.Equal(t, ctx, vctx)
}

func TestMetricsAddrTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, err = Setup(t.Context(), Options{MetricsAddr: ln.Addr().String()})
	require.ErrorIs(t, err, ErrMetricsAddr)
	assert.Contains(t, err.Error(), "TETHER_METRICS_ADDR")
}

func TestUnsupportedProtocol(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	_, err := Setup(t.Context(), Options{Tracing: true})
	require.ErrorIs(t, err, ErrOTLPProtocol)
	assert.Contains(t, err.Error(), "http/json")
}

// TestServiceName: spans are tether-worker's unless OTEL_SERVICE_NAME
// says otherwise.
func TestServiceName(t *testing.T) {
	for _, tc := range []struct{ env, want string }{{"", "tether-worker"}, {"billing-agents", "billing-agents"}} {
		t.Setenv("OTEL_SERVICE_NAME", tc.env)
		spans := tracetest.NewInMemoryExporter()
		tel := mustSetup(t, Options{SpanExporter: spans})
		_, span := tel.tracer.Tracer("test").Start(t.Context(), "s")
		span.End()
		got := spans.GetSpans()
		require.Len(t, got, 1)
		v, _ := got[0].Resource.Set().Value("service.name")
		assert.Equal(t, tc.want, v.AsString())
	}
}

// TestOTLPExport sends spans, as the OTEL_* variables configure, to an
// OTLP receiver on loopback over each protocol, and checks that Shutdown
// delivers the spans still batched.
func TestOTLPExport(t *testing.T) {
	for protocol, receive := range map[string]func(testing.TB) *telemetrytest.Receiver{
		"http/protobuf": telemetrytest.HTTP, "grpc": telemetrytest.GRPC,
	} {
		t.Run(protocol, func(t *testing.T) {
			got := receive(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", got.URL)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_SERVICE_NAME", "")
			tel, err := Setup(t.Context(), Options{Tracing: true})
			require.NoError(t, err)
			ctx, parent := tel.tracer.Tracer(sdkTracerName).Start(t.Context(), "RunActivity:ExecuteNode")
			_, end := StartVisit(ctx, VisitAttrs{Run: "r1", Node: "writer", Visit: 2, Backend: "codex"})
			end(nil)
			parent.End()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			require.NoError(t, tel.Shutdown(ctx))
			assert.Equal(t, map[string]string{"RunActivity:ExecuteNode": "tether-worker", VisitSpanName: "tether-worker"}, got.Spans())
		})
	}
}

func TestErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{temporal.NewNonRetryableApplicationError("agent said: secret", "SessionUnavailable", nil), "SessionUnavailable"},
		{fmt.Errorf("visit: %w", temporal.NewApplicationError("x", "WorkerStopping")), "WorkerStopping"},
		{fmt.Errorf("run: %w", context.Canceled), "canceled"},
		{fmt.Errorf("read blob: %w", &net.OpError{Op: "read", Err: &net.DNSError{Err: "no such host"}}), "*net.DNSError"},
		{errors.New("plain"), "*errors.errorString"},
	} {
		assert.Equal(t, tc.want, ErrorType(tc.err), "%v", tc.err)
	}
}

func TestRedactEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:token@collector.example:4318/v1/traces?key=abc": "https://collector.example:4318/v1/traces",
		"http://127.0.0.1:4317": "http://127.0.0.1:4317",
		"collector:4317":        "collector:4317",
		"user:secret@otel:4317": "otel:4317",
		"":                      "(unparsable)",
	} {
		assert.Equal(t, want, redactEndpoint(in), in)
	}
}

// TestWorkflowHelpersAreDeterministic runs workflowcheck, which make lint
// runs on the workflows that call these helpers, on this package.
func TestWorkflowHelpersAreDeterministic(t *testing.T) {
	cmd := exec.Command("go", "tool", "workflowcheck", "-test=false", "./internal/telemetry/")
	cmd.Dir = testenv.Root()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "workflowcheck:\n%s", out)
}

func mustSetup(t *testing.T, o Options) *Telemetry {
	t.Helper()
	tel, err := Setup(t.Context(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

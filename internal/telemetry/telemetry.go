// Package telemetry gives Tether's worker and CLI traces and metrics.
//
// Traces come from the Temporal SDK's OpenTelemetry interceptor, which
// makes a span for starting and running each workflow and activity, plus
// one span per node visit that the activities open with StartVisit. Spans
// are exported by OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set (the other
// OTEL_* variables configure the exporter); otherwise tracing is off and
// StartVisit costs nothing.
//
// A span carries ids and names only: run, node, visit number, kind,
// backend, session mode and session id. Prompts, agent outputs and error
// messages never become span attributes, events or status, because an
// error message can quote a CLI's stderr or a model's reply; a failed span
// records its error's type only (the error.type attribute).
//
// Metrics are the SDK's own (temporal_*) and Tether's (Metrics,
// WorkflowFailStop, WorkflowBudgetStop), served in the Prometheus text
// format on TETHER_METRICS_ADDR at /metrics; unset, metrics are off.
package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
)

// DefaultServiceName names the worker's spans; OTEL_SERVICE_NAME wins.
const DefaultServiceName = "tether-worker"

// Errors of Setup.
var (
	// ErrOTLPProtocol is an OTEL_EXPORTER_OTLP_PROTOCOL Tether cannot export with.
	ErrOTLPProtocol = errors.New("telemetry: unsupported OTLP protocol")
	// ErrMetricsAddr is a TETHER_METRICS_ADDR the metrics endpoint cannot listen on.
	ErrMetricsAddr = errors.New("telemetry: cannot serve metrics")
)

// Options say what to turn on; the zero value turns on nothing.
type Options struct {
	// ServiceName is the service.name of the spans and metrics;
	// DefaultServiceName if empty. OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override it.
	ServiceName string
	// Tracing exports spans by OTLP, as the OTEL_EXPORTER_OTLP_* variables
	// say (protocol grpc or http/protobuf, the default).
	Tracing bool
	// SpanExporter, when set, turns tracing on and receives each span as
	// it ends, instead of OTLP; tests pass an in-memory exporter.
	SpanExporter sdktrace.SpanExporter
	// MetricsAddr is the host:port that serves /metrics; empty: no metrics.
	MetricsAddr string
	// Profiling also serves Go's runtime profiles on MetricsAddr, at
	// /debug/pprof/ (CPU, heap, goroutines, blocking, mutexes, traces).
	Profiling bool
	// Logger hears what is on and any export trouble; nil: silence.
	Logger *slog.Logger
}

// Telemetry is what Setup turned on. Every method works on a nil or
// all-off Telemetry and then returns nothing to install.
type Telemetry struct {
	logger *slog.Logger

	tracer  *sdktrace.TracerProvider
	tracing interceptor.Interceptor

	meter   *sdkmetric.MeterProvider
	handler client.MetricsHandler
	metrics *Metrics
	server  *http.Server
	addr    string
	// unhealthy is why the worker cannot serve ("" while it can).
	unhealthy atomic.Value
}

// Setup turns on what o asks for. The caller calls Shutdown before it
// exits, so that the last spans are sent.
func Setup(ctx context.Context, o Options) (*Telemetry, error) {
	t := &Telemetry{logger: o.Logger}
	if t.logger == nil {
		t.logger = slog.New(slog.DiscardHandler)
	}
	if o.ServiceName == "" {
		o.ServiceName = DefaultServiceName
	}
	res := t.resource(ctx, o.ServiceName)
	if o.Tracing || o.SpanExporter != nil {
		if err := t.startTracing(ctx, o, res); err != nil {
			return nil, err
		}
	} else {
		t.logger.Info("tracing off: set OTEL_EXPORTER_OTLP_ENDPOINT to export spans")
	}
	if o.MetricsAddr != "" {
		if err := t.startMetrics(o.MetricsAddr, o.Profiling, res); err != nil {
			_ = t.Shutdown(ctx)
			return nil, err
		}
	} else {
		t.logger.Info("metrics off: set TETHER_METRICS_ADDR to serve Prometheus metrics")
	}
	return t, nil
}

// ClientInterceptors go in client.Options.Interceptors: they trace what
// the client starts, signals and queries, and pass the trace on to the
// workflow. They do not trace the workers built on that client; those take
// WorkerInterceptors, so no span is made twice.
func (t *Telemetry) ClientInterceptors() []interceptor.ClientInterceptor {
	if t == nil || t.tracing == nil {
		return nil
	}
	return []interceptor.ClientInterceptor{clientOnly{t.tracing}}
}

// WorkerInterceptors go in worker.Options.Interceptors: they trace each
// workflow and activity the worker runs.
func (t *Telemetry) WorkerInterceptors() []interceptor.WorkerInterceptor {
	if t == nil || t.tracing == nil {
		return nil
	}
	return []interceptor.WorkerInterceptor{t.tracing}
}

// MetricsHandler goes in client.Options.MetricsHandler; nil (the SDK's
// no-op) when metrics are off.
func (t *Telemetry) MetricsHandler() client.MetricsHandler {
	if t == nil {
		return nil
	}
	return t.handler
}

// Metrics are Tether's own activity-side metrics; nil, which counts
// nothing, when metrics are off.
func (t *Telemetry) Metrics() *Metrics {
	if t == nil {
		return nil
	}
	return t.metrics
}

// MetricsAddr is the address /metrics is served on, with the port chosen
// when TETHER_METRICS_ADDR asked for port 0; empty when metrics are off.
func (t *Telemetry) MetricsAddr() string {
	if t == nil {
		return ""
	}
	return t.addr
}

// Shutdown stops the metrics endpoint and sends the spans not yet sent.
// It waits no longer than ctx allows.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.server != nil {
		errs = append(errs, t.server.Shutdown(ctx))
	}
	if t.meter != nil {
		errs = append(errs, t.meter.Shutdown(ctx))
	}
	if t.tracer != nil {
		errs = append(errs, t.tracer.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// clientOnly hides the worker half of the tracing interceptor: the SDK
// also installs a client's interceptors on every worker built from that
// client, which would trace each workflow and activity twice beside
// WorkerInterceptors.
type clientOnly struct{ interceptor.ClientInterceptor }

package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/temporal"
)

// sdkTracerName is the instrumentation scope of the SDK interceptor's spans.
const sdkTracerName = "temporal-sdk-go"

func (t *Telemetry) startTracing(ctx context.Context, o Options, res *resource.Resource) error {
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if o.SpanExporter != nil {
		opts = append(opts, sdktrace.WithSyncer(o.SpanExporter))
	} else {
		exp, protocol, err := otlpExporter(ctx)
		if err != nil {
			return err
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
		t.logger.Info("tracing on: exporting spans by OTLP", "protocol", protocol,
			"endpoint", redactEndpoint(firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")),
			"service", serviceName(res))
	}
	t.tracer = sdktrace.NewTracerProvider(opts...)
	ic, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer: t.tracer.Tracer(sdkTracerName),
		SpanStarter: func(ctx context.Context, tr trace.Tracer, name string, opts ...trace.SpanStartOption) trace.Span {
			_, span := tr.Start(ctx, name, opts...)
			return typeOnlyErrors{span}
		},
	})
	if err != nil {
		_ = t.tracer.Shutdown(ctx)
		return fmt.Errorf("telemetry: create the Temporal tracing interceptor: %w", err)
	}
	t.tracing = ic
	return nil
}

// otlpExporter builds the exporter OTEL_EXPORTER_OTLP_PROTOCOL names; the
// exporters read the endpoint, headers, TLS and timeout from OTEL_* too.
func otlpExporter(ctx context.Context) (sdktrace.SpanExporter, string, error) {
	protocol := firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "", "http/protobuf":
		protocol = "http/protobuf"
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, "", fmt.Errorf("%w %q in OTEL_EXPORTER_OTLP_PROTOCOL: use grpc or http/protobuf", ErrOTLPProtocol, protocol)
	}
	if err != nil {
		return nil, "", fmt.Errorf("telemetry: create the OTLP %s span exporter: %w", protocol, err)
	}
	return exp, protocol, nil
}

// resource names the service: service.name from the caller, which
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override.
func (t *Telemetry) resource(ctx context.Context, service string) *resource.Resource {
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES leaves the rest in place.
		t.logger.Warn("telemetry: resource attributes partly ignored", "err", err)
	}
	if res == nil {
		res = resource.NewSchemaless(attribute.String("service.name", service))
	}
	return res
}

func serviceName(res *resource.Resource) string {
	v, _ := res.Set().Value("service.name")
	return v.AsString()
}

// typeOnlyErrors keeps error messages out of the SDK interceptor's spans:
// an activity's error can quote an agent's reply or a CLI's stderr. The
// span still fails, and says which error type failed it.
type typeOnlyErrors struct{ trace.Span }

func (s typeOnlyErrors) RecordError(err error, _ ...trace.EventOption) {
	if err != nil {
		s.SetAttributes(attribute.String("error.type", ErrorType(err)))
	}
}

func (s typeOnlyErrors) SetStatus(code codes.Code, _ string) { s.Span.SetStatus(code, "") }

// ErrorType names the kind of err without its message: a Temporal
// application error's type, timeout, canceled, terminated or panic, else
// the Go type of the innermost wrapped error.
func ErrorType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() != "" {
		return app.Type()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "timeout"
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) || errors.Is(err, context.Canceled) {
		return "canceled"
	}
	var terminated *temporal.TerminatedError
	if errors.As(err, &terminated) {
		return "terminated"
	}
	var panicked *temporal.PanicError
	if errors.As(err, &panicked) {
		return "panic"
	}
	for next := errors.Unwrap(err); next != nil; next = errors.Unwrap(err) {
		err = next
	}
	return fmt.Sprintf("%T", err)
}

// redactEndpoint keeps the scheme, host and path of an endpoint for a log
// line; credentials in its user part or query never reach the log.
func redactEndpoint(s string) string {
	bare := !strings.Contains(s, "://") // gRPC's host:port form
	if bare {
		s = "//" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "(unparsable)"
	}
	return strings.TrimPrefix((&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String(), "//")
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

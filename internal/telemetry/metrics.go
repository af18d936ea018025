package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// Names of Tether's metrics, exactly as Prometheus shows them.
const (
	VisitsMetric        = "tether_visits_total"
	VisitDurationMetric = "tether_visit_duration_seconds"
	RestoreBytesMetric  = "tether_restore_bytes_total"
	PackBytesMetric     = "tether_pack_bytes_total"
	FailStopsMetric     = "tether_fail_stops_total"
	BudgetStopsMetric   = "tether_budget_stops_total"
)

// Label values Tether uses; Visit and the byte counters take any string,
// these are the ones the docs list.
const (
	OutcomeOK     = "ok"
	OutcomeAsked  = "asked"
	OutcomeFailed = "failed"

	WhatSession   = "session"
	WhatWorkspace = "workspace"
)

// MetricsPath is where the endpoint serves metrics.
const MetricsPath = "/metrics"

// ProfilesPath is where the runtime profiles are served when Profiling is
// on (net/http/pprof's index; `go tool pprof http://HOST:PORT/debug/pprof/profile`).
const ProfilesPath = "/debug/pprof/"

// visitBuckets span an agent visit, from a scripted answer to an hour of
// agent work.
var visitBuckets = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// latencyBuckets replace OpenTelemetry's default buckets (0 to 10,000,
// meant for milliseconds) for the SDK's latencies, which are in seconds.
var latencyBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

// Metrics are Tether's activity-side metrics. A nil *Metrics counts
// nothing, so code can call it whether metrics are on or not. Counts that
// workflow code makes go through WorkflowFailStop and WorkflowBudgetStop
// instead, which a replay does not repeat.
type Metrics struct {
	visits   metric.Int64Counter
	duration metric.Float64Histogram
	restore  metric.Int64Counter
	pack     metric.Int64Counter
}

// NewMetrics creates Tether's instruments in mp.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	m := mp.Meter(tracerName)
	var (
		ms   Metrics
		errs = make([]error, 4)
	)
	ms.visits, errs[0] = m.Int64Counter(VisitsMetric,
		metric.WithDescription("Node visits that ended, by backend, node kind and outcome."))
	ms.duration, errs[1] = m.Float64Histogram(VisitDurationMetric, metric.WithUnit("s"),
		metric.WithDescription("How long node visits took, by backend and node kind."),
		metric.WithExplicitBucketBoundaries(visitBuckets...))
	ms.restore, errs[2] = m.Int64Counter(RestoreBytesMetric, metric.WithUnit("By"),
		metric.WithDescription("Bytes restored from the blob store onto this worker, by what (session, workspace)."))
	ms.pack, errs[3] = m.Int64Counter(PackBytesMetric, metric.WithUnit("By"),
		metric.WithDescription("Bytes packed from this worker into the blob store, by what (session, workspace)."))
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: create Tether's metrics: %w", err)
	}
	return &ms, nil
}

// Visit counts one ended visit and its duration. outcome is OutcomeOK,
// OutcomeAsked (the agent asked the user) or OutcomeFailed.
func (m *Metrics) Visit(backend, kind, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	ctx := context.Background()
	m.visits.Add(ctx, 1, metric.WithAttributes(
		attribute.String("backend", backend), attribute.String("kind", kind), attribute.String("outcome", outcome)))
	m.duration.Record(ctx, d.Seconds(), metric.WithAttributes(
		attribute.String("backend", backend), attribute.String("kind", kind)))
}

// RestoreBytes counts n bytes restored; what is WhatSession or WhatWorkspace.
func (m *Metrics) RestoreBytes(what string, n int64) {
	if m == nil {
		return
	}
	m.restore.Add(context.Background(), n, metric.WithAttributes(attribute.String("what", what)))
}

// PackBytes counts n bytes packed; what is WhatSession or WhatWorkspace.
func (m *Metrics) PackBytes(what string, n int64) {
	if m == nil {
		return
	}
	m.pack.Add(context.Background(), n, metric.WithAttributes(attribute.String("what", what)))
}

// startMetrics builds one meter provider for the SDK's metrics and
// Tether's, read by a Prometheus exporter served on addr.
func (t *Telemetry) startMetrics(addr string, profiling bool, res *resource.Resource) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%w on %q (TETHER_METRICS_ADDR): %w; pick a free host:port such as :9464", ErrMetricsAddr, addr, err)
	}
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		// Names stay as written: temporal_workflow_completed as the SDK's
		// metric reference spells it, tether_visits_total as Tether does.
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithoutSuffixes),
		otelprom.WithoutScopeInfo(),
	)
	if err == nil {
		err = errors.Join(
			reg.Register(collectors.NewGoCollector()),
			reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		)
	}
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("telemetry: create the Prometheus exporter: %w", err)
	}
	t.meter = sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exp),
		sdkmetric.WithResource(res),
		sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Scope: instrumentation.Scope{Name: sdkTracerName}},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: latencyBuckets}},
		)),
	)
	t.handler = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                t.meter.Meter(sdkTracerName),
		UseMonotonicCounters: true,
		// The handler's default is to panic.
		OnError: func(err error) { t.logger.Warn("telemetry: SDK metric dropped", "err", err) },
	})
	if t.metrics, err = NewMetrics(t.meter); err == nil {
		err = t.observeHealth(t.meter.Meter(tracerName))
	}
	if err != nil {
		_ = ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc(HealthPath, t.serveHealth)
	if profiling {
		mux.HandleFunc(ProfilesPath, pprof.Index)
		mux.HandleFunc(ProfilesPath+"cmdline", pprof.Cmdline)
		mux.HandleFunc(ProfilesPath+"profile", pprof.Profile)
		mux.HandleFunc(ProfilesPath+"symbol", pprof.Symbol)
		mux.HandleFunc(ProfilesPath+"trace", pprof.Trace)
	}
	t.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	t.addr = ln.Addr().String()
	go func() {
		if err := t.server.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			t.logger.Error("telemetry: metrics endpoint stopped", "addr", t.addr, "err", err)
		}
	}()
	t.logger.Info("metrics on: serving Prometheus metrics", "url", "http://"+t.addr+MetricsPath)
	if profiling {
		t.logger.Info("profiles on: serving Go runtime profiles", "url", "http://"+t.addr+ProfilesPath)
	}
	return nil
}

package telemetry

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkStartVisit is the cost a visit pays for its span: off (no span
// in ctx), and on, under an activity span, exporting to memory.
func BenchmarkStartVisit(b *testing.B) {
	a := VisitAttrs{Run: "run-1", Node: "writer", Visit: 3, Kind: "agent", Backend: "claude_code", SessionID: "sess-1"}
	b.Run("off", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			_, end := StartVisit(ctx, a)
			end(nil)
		}
	})
	b.Run("on", func(b *testing.B) {
		spans := tracetest.NewInMemoryExporter()
		tel, err := Setup(context.Background(), Options{SpanExporter: spans})
		if err != nil {
			b.Fatal(err)
		}
		defer tel.Shutdown(context.Background())
		ctx, parent := tel.tracer.Tracer(sdkTracerName).Start(context.Background(), "RunActivity:ExecuteNode")
		defer parent.End()
		b.ReportAllocs()
		for b.Loop() {
			_, end := StartVisit(ctx, a)
			end(nil)
			spans.Reset()
		}
	})
}

// BenchmarkMetricsVisit is the cost of counting one visit with metrics on.
func BenchmarkMetricsVisit(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	m, err := NewMetrics(mp)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Visit("claude_code", "agent", OutcomeOK, 3*time.Second)
	}
}

package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTelemetrySettings(t *testing.T) {
	t.Setenv("TETHER_METRICS_ADDR", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	cfg := FromEnv()
	assert.Empty(t, cfg.MetricsAddr, "metrics are off unless asked for")
	assert.Empty(t, cfg.OTLPEndpoint, "tracing is off unless asked for")

	t.Setenv("TETHER_METRICS_ADDR", ":9464")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
	cfg = FromEnv()
	assert.Equal(t, ":9464", cfg.MetricsAddr)
	assert.Equal(t, "http://collector:4318", cfg.OTLPEndpoint)

	// The traces-only endpoint is the one spans go to.
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4318/v1/traces")
	assert.Equal(t, "http://traces:4318/v1/traces", FromEnv().OTLPEndpoint)
}

// Package config reads the settings the worker and the `tether` CLI share
// from the environment, with defaults that make a fresh checkout work
// against the local dev server.
package config

import (
	"os"
	"path/filepath"
)

// Config is where Tether finds Temporal and its stores.
type Config struct {
	// TemporalAddress is host:port of the Temporal frontend.
	TemporalAddress string
	// Namespace is the Temporal namespace runs live in.
	Namespace string
	// Home is Tether's local directory (.tether by default).
	Home string
	// BlobURL is the blob store: file:///path, s3://bucket/prefix?… or
	// mem:// (tests only). Checkpoints and session blobs both live there.
	BlobURL string
	// StateDir holds this worker's live agent session roots.
	StateDir string
	// WorkDir holds the runs' working directories on this worker.
	WorkDir string
	// UIAddress is the Temporal Web UI, for links to a run.
	UIAddress string
	// MetricsAddr is the host:port the worker serves Prometheus metrics
	// on, at /metrics; empty: no metrics.
	MetricsAddr string
	// OTLPEndpoint is where spans are exported by OTLP; empty: no
	// tracing. The OpenTelemetry exporter reads it, and every other
	// OTEL_* setting, from the environment itself.
	OTLPEndpoint string
}

// FromEnv reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TETHER_HOME,
// TETHER_BLOB_URL, TETHER_STATE_DIR, TETHER_WORK_DIR, TETHER_UI,
// TETHER_METRICS_ADDR and OTEL_EXPORTER_OTLP_ENDPOINT (or its traces-only
// form OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
func FromEnv() Config {
	home := env("TETHER_HOME", ".tether")
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	return Config{
		TemporalAddress: env("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		Namespace:       env("TEMPORAL_NAMESPACE", "default"),
		Home:            home,
		BlobURL:         env("TETHER_BLOB_URL", "file://"+filepath.Join(home, "store")),
		StateDir:        env("TETHER_STATE_DIR", filepath.Join(home, "state")),
		WorkDir:         env("TETHER_WORK_DIR", filepath.Join(home, "work")),
		UIAddress:       env("TETHER_UI", "http://127.0.0.1:8233"),
		MetricsAddr:     os.Getenv("TETHER_METRICS_ADDR"),
		OTLPEndpoint:    env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")),
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// RunURL is the Web UI page of a run.
func (c Config) RunURL(runID string) string {
	return c.UIAddress + "/namespaces/" + c.Namespace + "/workflows/" + runID
}

// Package config reads the settings of the worker and the `tether` CLI
// from the environment, in one place, with defaults that make a fresh
// checkout work against the local dev server. Other packages take their
// settings as values; none reads the environment itself, except the
// OpenTelemetry SDK (OTEL_*) and the AWS SDK (its credential chain).
package config

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/workspace"
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

	// Worker names the worker and its own task queue (TETHER_WORKER_ID;
	// empty: hostname-pid).
	WorkerID string
	// MaxConcurrentVisits bounds the visits one worker runs at once
	// (TETHER_MAX_CONCURRENT_VISITS; 0: the default).
	MaxConcurrentVisits int
	// LogLevel is the worker's log level (TETHER_LOG_LEVEL: debug, info,
	// warn, error).
	LogLevel slog.Level
	// WorkspaceLimits bound one run's workspace (TETHER_WORKSPACE_*).
	WorkspaceLimits workspace.Limits
	// StoreRetry is how long one store operation waits out an outage
	// (TETHER_STORE_RETRY): 0 is the store's default, negative turns
	// retrying off.
	StoreRetry time.Duration
	// BlobKey is the store's encryption master key (TETHER_BLOB_KEY);
	// nil when none is set. Printed or logged, it shows as [redacted].
	BlobKey Secret
	// Sandbox is how agent CLIs and tool nodes are confined
	// (TETHER_SANDBOX: landlock, off, or auto, the default: landlock where
	// the kernel has it); SandboxRW and SandboxRO are paths every confined
	// process may also write, or read (TETHER_SANDBOX_RW, TETHER_SANDBOX_RO,
	// separated like PATH). See internal/sandbox.
	Sandbox              string
	SandboxRW, SandboxRO []string
	// Agents configures the agent backends (the variables are named on
	// backend.Config): endpoints, keys, models, permissions, the worker
	// variables every agent CLI and tool node gets (TETHER_PASS_ENV), and
	// what packing a session does with a secret (TETHER_REDACT). Its
	// String and LogValue never show a key.
	Agents backend.Config
}

// Secret is key material that prints and logs as [redacted].
type Secret []byte

func (Secret) String() string { return "[redacted]" }

// GoString keeps %#v from printing the bytes.
func (Secret) GoString() string { return "[redacted]" }

// LogValue keeps slog from printing the bytes.
func (Secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// StoreOptions are the blob.Open options of this configuration: the
// encryption key, if any, and a retry policy with StoreRetry (or
// defaultRetry when StoreRetry is 0) and hook onRetry.
func (c Config) StoreOptions(defaultRetry time.Duration, onRetry func(ctx context.Context, op, key string, attempt int, err error)) []blob.OpenOption {
	p := blob.RetryPolicy{MaxElapsed: defaultRetry, OnRetry: onRetry}
	if c.StoreRetry != 0 {
		p.MaxElapsed = c.StoreRetry
	}
	opts := []blob.OpenOption{blob.WithRetryPolicy(p)}
	if c.BlobKey != nil {
		opts = append(opts, blob.WithEncryptionKey(c.BlobKey))
	}
	return opts
}

// FromEnv reads the settings from the environment: TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TETHER_HOME, TETHER_BLOB_URL, TETHER_STATE_DIR,
// TETHER_WORK_DIR, TETHER_UI, TETHER_METRICS_ADDR,
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), the
// worker's settings documented on Config, and the agents' (endpoints,
// ANTHROPIC_API_KEY and OPENAI_API_KEY, TETHER_REDACT, ...). A malformed
// value is an error that names its variable.
func FromEnv() (Config, error) {
	home := env("TETHER_HOME", ".tether")
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	c := Config{
		TemporalAddress: env("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		Namespace:       env("TEMPORAL_NAMESPACE", "default"),
		Home:            home,
		BlobURL:         env("TETHER_BLOB_URL", "file://"+filepath.Join(home, "store")),
		StateDir:        env("TETHER_STATE_DIR", filepath.Join(home, "state")),
		WorkDir:         env("TETHER_WORK_DIR", filepath.Join(home, "work")),
		UIAddress:       env("TETHER_UI", "http://127.0.0.1:8233"),
		MetricsAddr:     os.Getenv("TETHER_METRICS_ADDR"),
		OTLPEndpoint:    env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")),
		WorkerID:        os.Getenv("TETHER_WORKER_ID"),
		Agents: backend.Config{
			CLIBin:               os.Getenv("TETHER_CLI_BIN"),
			AnthropicBaseURL:     os.Getenv("ANTHROPIC_BASE_URL"),
			OpenAIBaseURL:        os.Getenv("OPENAI_BASE_URL"),
			Models:               map[string]string{},
			APIKeys:              map[string]string{},
			ClaudePermissionMode: os.Getenv("TETHER_CLAUDE_PERMISSION_MODE"),
			CodexSandbox:         os.Getenv("TETHER_CODEX_SANDBOX"),
			PassEnv:              names(os.Getenv("TETHER_PASS_ENV")),
		},
	}
	for _, b := range []string{backend.ClaudeCode, backend.Codex, backend.Pi} {
		if m := os.Getenv("TETHER_MODEL_" + strings.ToUpper(b)); m != "" {
			c.Agents.Models[b] = m
		}
		if k := os.Getenv(apiKeyVars[b]); k != "" {
			c.Agents.APIKeys[b] = k
		}
	}
	mode, err := sandbox.ParseMode(os.Getenv("TETHER_SANDBOX"))
	if err != nil {
		return c, fmt.Errorf("TETHER_SANDBOX=%q: %v", os.Getenv("TETHER_SANDBOX"), err)
	}
	c.Sandbox = mode
	c.SandboxRW = filepath.SplitList(os.Getenv("TETHER_SANDBOX_RW"))
	c.SandboxRO = filepath.SplitList(os.Getenv("TETHER_SANDBOX_RO"))
	redact, err := packer.ParseRedactMode(os.Getenv(packer.RedactEnv))
	if err != nil {
		return c, err
	}
	c.Agents.Redact = redact
	if v := os.Getenv("TETHER_MAX_CONCURRENT_VISITS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return c, fmt.Errorf("TETHER_MAX_CONCURRENT_VISITS=%q: want a positive whole number", v)
		}
		c.MaxConcurrentVisits = n
	}
	if v := os.Getenv("TETHER_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return c, fmt.Errorf("TETHER_LOG_LEVEL=%q: want debug, info, warn or error", v)
		}
	}
	lim, err := workspaceLimits()
	if err != nil {
		return c, err
	}
	c.WorkspaceLimits = lim
	if v := os.Getenv(blob.RetryEnv); v != "" {
		d, ok := blob.ParseRetry(v)
		if !ok {
			return c, fmt.Errorf("%s=%q: want a duration such as 2m or 30s (0 turns retrying off)", blob.RetryEnv, v)
		}
		c.StoreRetry = d
	}
	if v := os.Getenv(blob.KeyEnv); v != "" {
		key, err := blob.ParseKey(v)
		if err != nil {
			return c, fmt.Errorf("%s: %w", blob.KeyEnv, err)
		}
		c.BlobKey = key
	}
	return c, nil
}

// apiKeyVars names the worker's variable that holds each CLI backend's key.
var apiKeyVars = map[string]string{
	backend.ClaudeCode: "ANTHROPIC_API_KEY",
	backend.Codex:      "OPENAI_API_KEY",
	backend.Pi:         "OPENAI_API_KEY",
}

// workspaceLimits reads the TETHER_WORKSPACE_* variables over the
// defaults.
func workspaceLimits() (workspace.Limits, error) {
	l := workspace.DefaultLimits()
	ints := []struct {
		name string
		dst  *int
	}{{"TETHER_WORKSPACE_MAX_FILES", &l.MaxFiles}, {"TETHER_WORKSPACE_MAX_DEPTH", &l.MaxDepth}, {"TETHER_WORKSPACE_MAX_PATH_BYTES", &l.MaxPathBytes}}
	for _, v := range ints {
		if s := os.Getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return l, fmt.Errorf("%s=%q: want a positive whole number", v.name, s)
			}
			*v.dst = n
		}
	}
	sizes := []struct {
		name string
		dst  *int64
	}{{"TETHER_WORKSPACE_MAX_BYTES", &l.MaxTotalBytes}, {"TETHER_WORKSPACE_MAX_FILE_BYTES", &l.MaxFileBytes}}
	for _, v := range sizes {
		if s := os.Getenv(v.name); s != "" {
			n, err := parseSize(s)
			if err != nil {
				return l, fmt.Errorf("%s=%q: %v", v.name, s, err)
			}
			*v.dst = n
		}
	}
	return l, nil
}

// parseSize reads a byte count with an optional K, M or G suffix (powers
// of 1024): "512M", "4G", "1048576".
func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive byte count such as 512M or 4G")
	}
	return n * mult, nil
}

// names splits a comma-separated list of variable names.
func names(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
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

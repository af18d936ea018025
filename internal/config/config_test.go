package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/treepolicy"
	"github.com/tether-run/tether/internal/workspace"
)

func fromEnv(t *testing.T) Config {
	t.Helper()
	c, err := FromEnv()
	require.NoError(t, err)
	return c
}

// refused reads the environment, which must be refused with an error
// that says each of want; it returns the error.
func refused(t *testing.T, want ...string) error {
	t.Helper()
	_, err := FromEnv()
	require.Error(t, err)
	for _, w := range want {
		assert.Contains(t, err.Error(), w)
	}
	return err
}

// refusedByName sets each variable of bad to its value, one at a time,
// and checks that the environment is refused with an error naming it.
func refusedByName(t *testing.T, bad map[string]string) {
	t.Helper()
	for name, value := range bad {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			refused(t, name)
		})
	}
}

func TestTelemetrySettings(t *testing.T) {
	t.Setenv("TETHER_METRICS_ADDR", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	cfg := fromEnv(t)
	assert.Empty(t, cfg.MetricsAddr, "metrics are off unless asked for")
	assert.Empty(t, cfg.OTLPEndpoint, "tracing is off unless asked for")

	t.Setenv("TETHER_METRICS_ADDR", ":9464")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
	cfg = fromEnv(t)
	assert.Equal(t, ":9464", cfg.MetricsAddr)
	assert.Equal(t, "http://collector:4318", cfg.OTLPEndpoint)

	// The traces-only endpoint is the one spans go to.
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4318/v1/traces")
	assert.Equal(t, "http://traces:4318/v1/traces", fromEnv(t).OTLPEndpoint)

	// Profiles are off unless asked for, and served beside the metrics.
	assert.False(t, fromEnv(t).Profiling)
	t.Setenv("TETHER_PPROF", "1")
	assert.True(t, fromEnv(t).Profiling)
	t.Setenv("TETHER_METRICS_ADDR", "")
	refused(t, "set TETHER_METRICS_ADDR too")
}

// Calls to Temporal are uncompressed unless gzip is asked for.
func TestTemporalGzip(t *testing.T) {
	assert.False(t, fromEnv(t).TemporalGzip)
	t.Setenv("TETHER_TEMPORAL_GZIP", "1")
	assert.True(t, fromEnv(t).TemporalGzip)
}

func TestWorkerSettings(t *testing.T) {
	t.Setenv("TETHER_WORKER_ID", "pod-7")
	t.Setenv("TETHER_MAX_CONCURRENT_VISITS", "4")
	t.Setenv("TETHER_LOG_LEVEL", "debug")
	t.Setenv("TETHER_WORKSPACE_MAX_FILES", "500")
	t.Setenv("TETHER_WORKSPACE_MAX_BYTES", "2G")
	t.Setenv("TETHER_WORKSPACE_MAX_PATH_BYTES", "1024")
	t.Setenv("TETHER_PASS_ENV", "GOCACHE, GOPATH,,")
	t.Setenv("TETHER_MODEL_CLAUDE_CODE", "claude-x")
	c := fromEnv(t)
	assert.Equal(t, "pod-7", c.WorkerID)
	assert.Equal(t, 4, c.MaxConcurrentVisits)
	assert.Equal(t, slog.LevelDebug, c.LogLevel)
	want := workspace.DefaultLimits()
	want.MaxFiles, want.MaxTotalBytes, want.MaxPathBytes = 500, 2<<30, 1024
	assert.Equal(t, want, c.WorkspaceLimits)
	assert.Equal(t, []string{"GOCACHE", "GOPATH"}, c.Agents.PassEnv)
	assert.Equal(t, map[string]map[string]string{"claude_code": {"TETHER_MODEL_CLAUDE_CODE": "claude-x"}}, c.Agents.Vars)
}

func TestMalformedSettingsNameTheirVariable(t *testing.T) {
	refusedByName(t, map[string]string{
		"TETHER_MAX_CONCURRENT_VISITS":    "many",
		"TETHER_LOG_LEVEL":                "loud",
		"TETHER_WORKSPACE_MAX_FILES":      "-1",
		"TETHER_WORKSPACE_MAX_FILE_BYTES": "lots",
		"TETHER_REDACT":                   "maybe",
		"TETHER_PPROF":                    "yes",
		"TETHER_TEMPORAL_GZIP":            "on",
	})
}

func TestStoreSettings(t *testing.T) {
	t.Setenv("TETHER_STORE_RETRY", "0")
	t.Setenv("TETHER_BLOB_KEY", strings.Repeat("ab", 32))
	c := fromEnv(t)
	assert.Negative(t, c.StoreRetry, "0 turns retrying off")
	assert.Len(t, c.BlobKey, 32)
	assert.Len(t, c.StoreOptions(time.Minute, nil), 2, "a retry policy and the key")
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "config", c, "key", c.BlobKey)
	for _, printed := range []string{fmt.Sprintf("%v %+v %#v %s %x", c, c, c, c.BlobKey, c.BlobKey), logged.String()} {
		assert.NotContains(t, printed, "171", "the key's bytes (0xab = 171) are never printed")
		assert.NotContains(t, printed, "abab", "nor its hex")
	}
	t.Setenv("TETHER_BLOB_KEY", "short")
	_, err := FromEnv()
	require.ErrorContains(t, err, "TETHER_BLOB_KEY")
	assert.NotContains(t, err.Error(), "short", "a key never reaches an error message")
	t.Setenv("TETHER_BLOB_KEY", "")
	t.Setenv("TETHER_STORE_RETRY", "soon")
	_, err = FromEnv()
	require.ErrorContains(t, err, "TETHER_STORE_RETRY")
}

// The agents' keys and redact mode are read here, once, and passed down:
// the executors and packers never read the environment themselves.
func TestAgentSettings(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-worker")
	t.Setenv("OPENAI_API_KEY", "sk-openai-worker")
	t.Setenv("TETHER_REDACT", "")
	c := fromEnv(t)
	keys := map[string]string{}
	for b, vs := range c.Agents.Vars {
		f, _ := catalogue.Lookup(b)
		k, _ := f.Var(agent.VarAPIKey)
		keys[b] = vs[k.Name]
	}
	assert.Equal(t, map[string]string{"claude_code": "sk-ant-worker", "codex": "sk-openai-worker", "pi": "sk-openai-worker", "opencode": "sk-openai-worker"}, keys,
		"each backend's key is read from the variable its facts name")
	assert.Equal(t, treepolicy.RedactDetect, c.Agents.Redact)
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "config", c, "agents", c.Agents)
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v %s", c, c, c.Agents, logged.String()), "sk-", "a printed or logged configuration shows no key")

	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("TETHER_REDACT", "refuse")
	c = fromEnv(t)
	assert.NotContains(t, c.Agents.Vars, "claude_code", "an unset key is no key")
	assert.Equal(t, treepolicy.RedactRefuse, c.Agents.Redact)

	t.Setenv("TETHER_REDACT", "maybe")
	_, err := FromEnv()
	assert.ErrorIs(t, err, treepolicy.ErrRedactMode)
}

// Variables names what FromEnv reads (what a deployment may set), and
// reading them leaves FromEnv reading the real environment.
func TestVariablesNamesWhatFromEnvReads(t *testing.T) {
	vars := Variables()
	for _, v := range []string{"TEMPORAL_ADDRESS", "TETHER_BLOB_URL", "TETHER_SHUTDOWN_GRACE", "TETHER_BLOB_KEY", "ANTHROPIC_API_KEY", "TETHER_WORKSPACE_MAX_FILES"} {
		assert.Contains(t, vars, v)
	}
	assert.NotContains(t, vars, "HOME")
	t.Setenv("TETHER_SHUTDOWN_GRACE", "7s")
	c, err := FromEnv()
	require.NoError(t, err)
	assert.Equal(t, 7*time.Second, c.ShutdownGrace)
}

func TestCheckpointKey(t *testing.T) {
	t.Setenv("TETHER_BLOB_URL", "s3://bucket/runs?region=us-east-1")
	t.Setenv("TETHER_CHECKPOINT_KEY", "")
	cfg := fromEnv(t)
	assert.Nil(t, cfg.CheckpointKey)
	assert.Empty(t, cfg.RunStoreOptions())
	assert.Contains(t, cfg.StoreTrustWarning(), "TETHER_CHECKPOINT_KEY", "an S3 store without a key must be called trusted")

	t.Setenv("TETHER_BLOB_URL", "s3://bucket/runs?region=us-east-1&encrypt=true")
	assert.Empty(t, fromEnv(t).StoreTrustWarning(), "an encrypted store authenticates every blob")
	t.Setenv("TETHER_BLOB_URL", "file:///var/lib/tether")
	assert.Empty(t, fromEnv(t).StoreTrustWarning(), "the warning is for S3 stores")

	hexKey := strings.Repeat("ab", 32)
	t.Setenv("TETHER_BLOB_URL", "s3://bucket/runs?region=us-east-1")
	t.Setenv("TETHER_CHECKPOINT_KEY", hexKey)
	cfg = fromEnv(t)
	assert.Len(t, []byte(cfg.CheckpointKey), 32)
	assert.Len(t, cfg.RunStoreOptions(), 1)
	assert.Empty(t, cfg.StoreTrustWarning())
	// The key never reaches a log line or a printout.
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "key", cfg.CheckpointKey, "cfg", cfg)
	out := buf.String() + fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg)
	assert.NotContains(t, out, hexKey)
	assert.NotContains(t, out, "171")
	assert.NotContains(t, strings.ToLower(out), "abababab")

	t.Setenv("TETHER_CHECKPOINT_KEY", "short")
	err := refused(t, "TETHER_CHECKPOINT_KEY")
	assert.NotContains(t, err.Error(), "short")
}

// Confinement is on unless turned off; a mode nobody knows is refused, not
// read as off.
func TestSandboxSettings(t *testing.T) {
	t.Setenv("TETHER_SANDBOX", "")
	t.Setenv("TETHER_SANDBOX_RW", "/cache/go:/cache/npm")
	t.Setenv("TETHER_SANDBOX_RO", "/opt/sdk")
	cfg := fromEnv(t)
	assert.Equal(t, "auto", cfg.Sandbox)
	assert.Equal(t, []string{"/cache/go", "/cache/npm"}, cfg.SandboxRW)
	assert.Equal(t, []string{"/opt/sdk"}, cfg.SandboxRO)
	t.Setenv("TETHER_SANDBOX", "off")
	assert.Equal(t, "off", fromEnv(t).Sandbox)
	t.Setenv("TETHER_SANDBOX", "bwrap")
	refused(t, "TETHER_SANDBOX")
}

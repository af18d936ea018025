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
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/answerlink"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/egress"
	"github.com/tether-run/tether/internal/notify"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/treepolicy"
	"github.com/tether-run/tether/internal/workspace"
)

// Config is where Tether finds Temporal and its stores.
type Config struct {
	// TemporalAddress is host:port of the Temporal frontend.
	TemporalAddress string
	// Namespace is the Temporal namespace runs live in.
	Namespace string
	// TemporalTLS is how to authenticate to the frontend (TEMPORAL_TLS_*,
	// TEMPORAL_API_KEY).
	TemporalTLS TemporalTLS
	// TemporalGzip compresses the calls to the frontend with gzip
	// (TETHER_TEMPORAL_GZIP=1), the Temporal SDK's default. Tether turns it
	// off unless asked: its calls are small, and on a frontend near the
	// workers the compression costs both sides processor time for nothing
	// (docs/performance.md, "Calls to Temporal without gzip").
	TemporalGzip bool
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
	// Profiling serves Go's runtime profiles (net/http/pprof) beside the
	// metrics, at /debug/pprof/ (TETHER_PPROF=1; it needs MetricsAddr).
	Profiling bool
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
	// ShutdownGrace is how long a stopping worker lets its visits run on
	// before it hands them back to the cluster (TETHER_SHUTDOWN_GRACE).
	ShutdownGrace time.Duration
	// WorkspaceLimits bound one run's workspace (TETHER_WORKSPACE_*).
	WorkspaceLimits workspace.Limits
	// StoreRetry is how long one store operation waits out an outage
	// (TETHER_STORE_RETRY): 0 is the store's default, negative turns
	// retrying off.
	StoreRetry time.Duration
	// BlobKey is the store's encryption master key (TETHER_BLOB_KEY);
	// nil when none is set. Printed or logged, it shows as [redacted].
	BlobKey Secret
	// CheckpointKey authenticates the run store's checkpoints
	// (TETHER_CHECKPOINT_KEY, 32 bytes as hex or base64); nil when none is
	// set, and then the bucket must be trusted. Workers and `tether` need
	// the same key. Printed or logged, it shows as [redacted].
	CheckpointKey Secret
	// ConsoleToken is what `tether console` asks every visitor for
	// (TETHER_CONSOLE_TOKEN); nil: none, and then the console listens on
	// loopback only. Printed or logged, it shows as [redacted].
	ConsoleToken Secret
	// Sandbox is how agent CLIs and tool nodes are confined
	// (TETHER_SANDBOX: auto, the default, full, landlock or off);
	// SandboxRW and SandboxRO are paths every confined process may also
	// write, or read (TETHER_SANDBOX_RW, TETHER_SANDBOX_RO, separated like
	// PATH); SandboxDeny are services of the worker's no confined process
	// may reach besides those it knows (TETHER_SANDBOX_DENY); Cgroup is
	// where visit cgroups go (TETHER_CGROUP). See internal/sandbox and
	// sandbox.go here.
	Sandbox              string
	SandboxRW, SandboxRO []string
	// WorkdirRoots are the directories below which an agent's absolute
	// workdir may lie (TETHER_WORKDIR_ROOTS, separated like PATH); none
	// refuses every absolute workdir.
	WorkdirRoots []string
	SandboxDeny  []egress.Service
	Cgroup       string
	// Notify sends notices of runs to the endpoints TETHER_NOTIFY names,
	// signed with TETHER_NOTIFY_SECRET, with links on the console at
	// ConsoleURL signed with LinkKey (internal/notify); nil when
	// TETHER_NOTIFY is not set. It prints without its secrets.
	Notify *notify.Sender
	// ConsoleURL is the console's public address (TETHER_CONSOLE_URL):
	// the base of the links in notices.
	ConsoleURL string
	// LinkKey signs and checks one-click answer links (TETHER_LINK_KEY,
	// 32 bytes as hex or base64), the same on the workers and the console;
	// nil: notices carry no answer links. LinkTTL is how long a link is
	// valid (TETHER_LINK_TTL, default 7 days).
	LinkKey Secret
	LinkTTL time.Duration
	// Versioning is how the worker joins Temporal's worker deployments
	// (TETHER_VERSIONING, TETHER_DEPLOYMENT, TETHER_BUILD_ID).
	Versioning Versioning
	// GitHub is how workers reach GitHub (TETHER_GITHUB_*; docs/github.md).
	GitHub GitHub
	// GitHubWebhookSecret checks the console's GitHub deliveries
	// (TETHER_GITHUB_WEBHOOK_SECRET) and Triggers names its triggers file
	// (TETHER_TRIGGERS); both empty: the console takes no webhooks.
	GitHubWebhookSecret Secret
	Triggers            string
	// Agents configures the agent backends: where their CLIs are, each
	// backend's own variables (endpoint, key, model, settings), the worker
	// variables every agent CLI and tool node gets (TETHER_PASS_ENV), and
	// what packing a session does with a secret (TETHER_REDACT). Its
	// String and LogValue never show a key.
	Agents Agents
}

// GitHub is how a worker reaches GitHub, as plain values (the worker
// builds internal/github/forge from them). Its credentials print as
// [redacted].
type GitHub struct {
	// API and Git are the REST API's base and the base of clone URLs
	// (TETHER_GITHUB_API_URL, TETHER_GITHUB_URL); empty: github.com's.
	API, Git string
	// Token is TETHER_GITHUB_TOKEN; AppID and AppKey a GitHub App's id
	// (TETHER_GITHUB_APP_ID) and the private key read from the file
	// TETHER_GITHUB_APP_KEY names.
	Token  Secret
	AppID  int64
	AppKey Secret
}

// Agents is how the worker runs its agent backends, as plain values: the
// worker hands them to the registry (internal/backend).
type Agents struct {
	// CLIBin is the directory holding the agent CLIs (TETHER_CLI_BIN);
	// empty: PATH.
	CLIBin string
	// Vars are the values of every backend's variables (agent.Facts.Vars,
	// read in a loop over the catalogue), by backend name and then
	// variable name; unset ones are left out.
	Vars map[string]map[string]string
	// PassEnv names worker variables every agent CLI and tool node gets
	// (TETHER_PASS_ENV, comma-separated).
	PassEnv []string
	// Redact is what packing a session or snapshotting a workspace does
	// with a secret-looking token (TETHER_REDACT).
	Redact treepolicy.RedactMode
}

// String describes the agents' configuration without its keys.
func (a Agents) String() string { return fmt.Sprint(a.LogValue()) }

// GoString is String, so that %#v shows no key either.
func (a Agents) GoString() string { return a.String() }

// LogValue shows every variable but the keys, and which backends have a
// key.
func (a Agents) LogValue() slog.Value {
	vars, keyed := catalogue.Shown(a.Vars)
	return slog.GroupValue(
		slog.String("cli_bin", a.CLIBin),
		slog.Any("vars", vars),
		slog.Any("api_keys_for", keyed),
		slog.Any("pass_env", a.PassEnv),
		slog.String("redact", a.Redact.String()),
	)
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
// TEMPORAL_NAMESPACE, the frontend's TLS and API key (TemporalTLS),
// TETHER_HOME, TETHER_BLOB_URL, TETHER_STATE_DIR,
// TETHER_WORK_DIR, TETHER_UI, TETHER_METRICS_ADDR, TETHER_PPROF,
// TETHER_TEMPORAL_GZIP,
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), the
// worker's settings documented on Config, and the agents' (TETHER_CLI_BIN,
// every backend's variables as its facts name them, TETHER_REDACT, ...). A malformed
// value is an error that names its variable.
func FromEnv() (Config, error) {
	readMu.Lock()
	defer readMu.Unlock()
	return readEnv()
}

var (
	// readMu keeps Variables' recording getenv from FromEnv's readers.
	readMu sync.Mutex
	// getenv is how this package reads the environment: os.Getenv, or
	// Variables' recorder.
	getenv = os.Getenv
)

// Variables names every environment variable FromEnv reads, sorted: what a
// deployment (docker-compose.yml, a pod spec) may set for Tether. The AWS
// SDK's credential chain and the OpenTelemetry SDK read their own
// variables besides (AWS_*, OTEL_*).
func Variables() []string {
	readMu.Lock()
	defer readMu.Unlock()
	seen := map[string]bool{}
	getenv = func(name string) string {
		seen[name] = true
		return ""
	}
	defer func() { getenv = os.Getenv }()
	_, _ = readEnv()
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// onOff reads the switch name: 1 or true is on; 0, false or unset off.
func onOff(name string) (bool, error) {
	switch v := getenv(name); v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want 1 or 0", name, v)
	}
}

func readEnv() (Config, error) {
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
		MetricsAddr:     getenv("TETHER_METRICS_ADDR"),
		OTLPEndpoint:    env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", getenv("OTEL_EXPORTER_OTLP_ENDPOINT")),
		WorkerID:        getenv("TETHER_WORKER_ID"),
		Agents: Agents{
			CLIBin:  getenv("TETHER_CLI_BIN"),
			Vars:    catalogue.Vars(getenv),
			PassEnv: names(getenv("TETHER_PASS_ENV")),
		},
	}
	var err error
	if c.TemporalTLS, err = temporalTLS(); err != nil {
		return c, err
	}
	if c.TemporalGzip, err = onOff("TETHER_TEMPORAL_GZIP"); err != nil {
		return c, err
	}
	if c.Profiling, err = onOff("TETHER_PPROF"); err != nil {
		return c, err
	}
	if c.Profiling && c.MetricsAddr == "" {
		return c, fmt.Errorf("TETHER_PPROF=%s: profiles are served beside the metrics; set TETHER_METRICS_ADDR too (e.g. 127.0.0.1:9464)", getenv("TETHER_PPROF"))
	}
	if err := c.readSandbox(); err != nil {
		return c, err
	}
	redact, err := treepolicy.ParseRedactMode(getenv(treepolicy.RedactEnv))
	if err != nil {
		return c, err
	}
	c.Agents.Redact = redact
	if v := getenv("TETHER_MAX_CONCURRENT_VISITS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return c, fmt.Errorf("TETHER_MAX_CONCURRENT_VISITS=%q: want a positive whole number", v)
		}
		c.MaxConcurrentVisits = n
	}
	if v := getenv("TETHER_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return c, fmt.Errorf("TETHER_LOG_LEVEL=%q: want debug, info, warn or error", v)
		}
	}
	lim, err := workspaceLimits()
	if err != nil {
		return c, err
	}
	c.WorkspaceLimits = lim
	c.ShutdownGrace = DefaultShutdownGrace
	if v := getenv("TETHER_SHUTDOWN_GRACE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("TETHER_SHUTDOWN_GRACE=%q: want a duration such as 20s (0 hands visits back at once)", v)
		}
		c.ShutdownGrace = d
	}
	if v := getenv(blob.RetryEnv); v != "" {
		d, ok := blob.ParseRetry(v)
		if !ok {
			return c, fmt.Errorf("%s=%q: want a duration such as 2m or 30s (0 turns retrying off)", blob.RetryEnv, v)
		}
		c.StoreRetry = d
	}
	if v := getenv(blob.KeyEnv); v != "" {
		key, err := blob.ParseKey(v)
		if err != nil {
			return c, fmt.Errorf("%s: %w", blob.KeyEnv, err)
		}
		c.BlobKey = key
	}
	if v := getenv(runstore.KeyEnv); v != "" {
		key, err := blob.ParseKey(v)
		if err != nil {
			return c, fmt.Errorf("%s: want 32 bytes as 64 hex digits or base64 (e.g. `openssl rand -hex 32`), got %d characters", runstore.KeyEnv, len(strings.TrimSpace(v)))
		}
		c.CheckpointKey = key
	}
	// The console's own name for it (console.TokenEnv); config does not
	// import the console.
	if v := strings.TrimSpace(getenv("TETHER_CONSOLE_TOKEN")); v != "" {
		c.ConsoleToken = Secret(v)
	}
	if err := c.readNotify(); err != nil {
		return c, err
	}
	if err := c.readVersioning(); err != nil {
		return c, err
	}
	if err := c.readGitHub(); err != nil {
		return c, err
	}
	return c, nil
}

// readGitHub reads the workers' GitHub credentials and the console's
// webhook settings.
func (c *Config) readGitHub() error {
	c.GitHub = GitHub{API: strings.TrimSpace(getenv("TETHER_GITHUB_API_URL")), Git: strings.TrimSpace(getenv("TETHER_GITHUB_URL"))}
	if v := strings.TrimSpace(getenv("TETHER_GITHUB_TOKEN")); v != "" {
		c.GitHub.Token = Secret(v)
	}
	if v := strings.TrimSpace(getenv("TETHER_GITHUB_APP_ID")); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("TETHER_GITHUB_APP_ID=%q: want the GitHub App's id, a whole number (its settings page shows it)", v)
		}
		c.GitHub.AppID = id
	}
	if path := strings.TrimSpace(getenv("TETHER_GITHUB_APP_KEY")); path != "" {
		key, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("TETHER_GITHUB_APP_KEY=%s: %w; give the path of the private key (PEM) GitHub made for the App", path, err)
		}
		c.GitHub.AppKey = Secret(key)
	}
	if (c.GitHub.AppID != 0) != (c.GitHub.AppKey != nil) {
		return fmt.Errorf("a GitHub App needs both TETHER_GITHUB_APP_ID and TETHER_GITHUB_APP_KEY")
	}
	if v := strings.TrimSpace(getenv("TETHER_GITHUB_WEBHOOK_SECRET")); v != "" {
		c.GitHubWebhookSecret = Secret(v)
	}
	c.Triggers = strings.TrimSpace(getenv("TETHER_TRIGGERS"))
	return nil
}

// readNotify reads the notification settings: TETHER_NOTIFY and its
// secret, the console's address and the link key.
func (c *Config) readNotify() error {
	c.ConsoleURL = strings.TrimSpace(getenv(notify.ConsoleURLEnv))
	if v := getenv(answerlink.KeyEnv); v != "" {
		key, err := blob.ParseKey(v)
		if err != nil {
			return fmt.Errorf("%s: want 32 bytes as 64 hex digits or base64 (e.g. `openssl rand -hex 32`), the same on every worker and the console", answerlink.KeyEnv)
		}
		c.LinkKey = key
	}
	c.LinkTTL = answerlink.DefaultTTL
	if v := getenv(answerlink.TTLEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s=%q: want a duration such as 168h (7 days) or 24h", answerlink.TTLEnv, v)
		}
		c.LinkTTL = d
	}
	eps, err := notify.ParseEndpoints(getenv(notify.Env))
	if err != nil {
		return err
	}
	c.Notify, err = notify.NewSender(eps, []byte(getenv(notify.SecretEnv)), c.ConsoleURL, c.LinkKey, c.LinkTTL)
	return err
}

// DefaultShutdownGrace leaves a stopping worker's visits 20 s to finish:
// with the few seconds the hand-back takes, inside the 30 s a container
// platform (docker compose's stop_grace_period, Kubernetes'
// terminationGracePeriodSeconds) waits before it kills.
const DefaultShutdownGrace = 20 * time.Second

// RunStoreOptions are the runstore.New options of this configuration: the
// checkpoint key, if any.
func (c Config) RunStoreOptions() []runstore.Option {
	if c.CheckpointKey == nil {
		return nil
	}
	return []runstore.Option{runstore.WithKey(c.CheckpointKey)}
}

// StoreTrustWarning is what a worker logs once at start when whoever can
// write to the bucket controls the runs' checkpoints: the store is S3, no
// checkpoint key is set and the store is not encrypted (whose envelope
// authenticates each blob). It is "" otherwise.
func (c Config) StoreTrustWarning() string {
	u, err := url.Parse(c.BlobURL)
	if err != nil || u.Scheme != "s3" || c.CheckpointKey != nil || u.Query().Get("encrypt") == "true" {
		return ""
	}
	return "the run store's checkpoints are not authenticated: whoever can write to the bucket controls every run's graph (the argv of its tool nodes), digests and workspace; set " + runstore.KeyEnv + " on every worker and tether, or use encrypt=true (docs/security.md)"
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
		if s := getenv(v.name); s != "" {
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
		if s := getenv(v.name); s != "" {
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
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

// RunURL is the Web UI page of a run.
func (c Config) RunURL(runID string) string {
	return c.UIAddress + "/namespaces/" + c.Namespace + "/workflows/" + runID
}

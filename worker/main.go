// Command tether-worker runs Tether's GraphRun workflow and its activities.
// It connects to TEMPORAL_ADDRESS (default 127.0.0.1:7233) in
// TEMPORAL_NAMESPACE (default "default"), with TLS and a client
// certificate or API key when TEMPORAL_TLS_* or TEMPORAL_API_KEY say so,
// polls the task queue "tether" and its own worker queue, and stops
// gracefully on SIGINT or SIGTERM, sending its last spans before it exits. With OTEL_EXPORTER_OTLP_ENDPOINT set it
// exports traces by OTLP; with TETHER_METRICS_ADDR set it serves Prometheus
// metrics there at /metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/askuser"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/github/forge"
	"github.com/tether-run/tether/internal/sandbox/confine"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/temporalclient"
	"github.com/tether-run/tether/internal/version"
	"github.com/tether-run/tether/internal/workerhost"
)

func main() {
	// The worker's own binary serves the ask_user MCP server that Claude
	// Code and Codex start for a visit.
	if len(os.Args) > 1 && os.Args[1] == askuser.Subcommand {
		os.Exit(askuser.Main(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == confine.Subcommand {
		os.Exit(confine.Main(os.Args[2:]))
	}
	if code, done := flags(os.Args[1:], os.Stdout, os.Stderr); done {
		os.Exit(code)
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tether-worker:", err)
		os.Exit(1)
	}
}

// usage is what `tether-worker --help` prints.
const usage = `Usage: tether-worker [--version]

tether-worker runs Tether's GraphRun workflow and its activities: it
polls the Temporal task queue "tether" (and a queue of its own) at
TEMPORAL_ADDRESS in TEMPORAL_NAMESPACE, runs each visit's agent CLI or
tool confined, and stores sessions, workspaces and checkpoints at
TETHER_BLOB_URL. It stops gracefully on SIGINT or SIGTERM.

It takes no arguments: it is configured by the environment it shares
with tether (README.md, "Configuration"), e.g. TEMPORAL_ADDRESS,
TETHER_BLOB_URL, TETHER_CHECKPOINT_KEY, TETHER_SANDBOX,
TETHER_MAX_CONCURRENT_VISITS, TETHER_METRICS_ADDR.

Flags:
  --version   print this build's version and exit
  --help      print this and exit
`

// flags handles the worker's few flags before anything starts: --help
// and --version print and exit 0, anything else is a usage error (exit
// 2). done says the process should exit with code.
func flags(args []string, stdout, stderr io.Writer) (code int, done bool) {
	fs := flag.NewFlagSet("tether-worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	showVersion := fs.Bool("version", false, "")
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return 0, true
	case err != nil:
		fmt.Fprintf(stderr, "tether-worker: %v\n\n%s", err, usage)
		return 2, true
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "tether-worker: unexpected argument %q: the worker takes no arguments; it is configured by its environment\n\n%s", fs.Arg(0), usage)
		return 2, true
	case *showVersion:
		fmt.Fprintln(stdout, versionLine())
		return 0, true
	}
	return 0, false
}

func run() error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	slog.SetDefault(logger)
	versioning := workerVersioning(cfg.Versioning)
	if versioning.Mode == workerhost.VersioningOff {
		logger.Info("tether-worker "+version.Get().String(), "versioning", "off (TETHER_VERSIONING=off): an unversioned worker; runs are not pinned to a build, and an upgrade must keep every workflow change replayable (docs/operations.md)")
	} else {
		logger.Info("tether-worker "+version.Get().String(), "deployment", versioning.Deployment, "build", versioning.BuildID, "versioning", versioning.Mode.String())
	}
	sb, err := confinement(context.Background(), cfg, logger)
	if err != nil {
		return err
	}
	defer sb.Close()
	// The agents' executors take a sandbox as one that confines (Codex
	// then leaves its own off); the visits' admission reads the level.
	agentSandbox := sb
	if !sb.Confines() {
		agentSandbox = nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	tel, err := telemetry.Setup(ctx, telemetry.Options{
		ServiceName: telemetry.DefaultServiceName,
		Tracing:     cfg.OTLPEndpoint != "",
		MetricsAddr: cfg.MetricsAddr,
		Profiling:   cfg.Profiling,
		Logger:      logger,
	})
	if err != nil {
		return err
	}
	// Runs last, after the workers stopped: their last spans are sent.
	defer flush(tel, logger)

	blobs, err := blob.Open(ctx, cfg.BlobURL, cfg.StoreOptions(0, activities.HeartbeatOnRetry)...)
	if err != nil {
		return fmt.Errorf("open blob store (TETHER_BLOB_URL): %w", err)
	}
	defer blobs.Close()
	if cfg.Notify != nil {
		logger.Info("notices on", "endpoints", cfg.Notify, "answer_links", cfg.LinkKey != nil && cfg.ConsoleURL != "")
	}
	if w := cfg.StoreTrustWarning(); w != "" {
		logger.Warn(w, "store", cfg.BlobURL)
	}

	c, err := temporalclient.Dial(cfg, client.Options{
		Logger: tlog.NewStructuredLogger(logger),
		// The worker's own interceptors come from workerhost; these trace
		// the client's calls.
		Interceptors:   tel.ClientInterceptors(),
		MetricsHandler: tel.MetricsHandler(),
	})
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s (TEMPORAL_ADDRESS): %w", cfg.TemporalAddress, err)
	}
	defer c.Close()

	backends, err := defaultBackends(cfg.Agents, agentSandbox, logger)
	if err != nil {
		return err
	}
	gh, err := forge.New(forge.Config{API: cfg.GitHub.API, Git: cfg.GitHub.Git, Token: string(cfg.GitHub.Token),
		AppID: cfg.GitHub.AppID, AppKey: cfg.GitHub.AppKey, Logger: logger})
	if err != nil {
		return err
	}
	if gh != nil {
		logger.Info("github on", "github", gh)
	}
	h, err := workerhost.Start(c, workerhost.Options{
		ID:                  cfg.WorkerID,
		MaxConcurrentVisits: cfg.MaxConcurrentVisits,
		Blobs:               blobs,
		CheckpointKey:       cfg.CheckpointKey,
		Backends:            backends,
		StateDir:            cfg.StateDir,
		WorkDir:             cfg.WorkDir,
		WorkdirRoots:        cfg.WorkdirRoots,
		PassEnv:             cfg.Agents.PassEnv,
		Sandbox:             sb,
		WorkspaceLimits:     cfg.WorkspaceLimits,
		WorkspaceRedact:     cfg.Agents.Redact,
		Logger:              logger,
		Interceptors:        append(tel.WorkerInterceptors(), extraInterceptors...),
		Metrics:             tel.Metrics(),
		Namespace:           cfg.Namespace,
		ShutdownGrace:       cfg.ShutdownGrace,
		Notify:              cfg.Notify,
		GitHub:              gh,
		ConsoleURL:          cfg.ConsoleURL,
		OnHealth:            tel.SetHealth,
		Versioning:          versioning,
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	// A second signal stops waiting for the grace period.
	stop()
	h.Stop()
	return nil
}

// extraInterceptors are added to the worker's own by test-only builds
// (upgradeprobe.go); none in a release.
var extraInterceptors []interceptor.WorkerInterceptor

// workerVersioning is the worker deployment settings as workerhost takes
// them.
func workerVersioning(v config.Versioning) workerhost.Versioning {
	mode := workerhost.VersioningAuto
	switch v.Mode {
	case config.VersioningOff:
		return workerhost.Versioning{}
	case config.VersioningManual:
		mode = workerhost.VersioningManual
	}
	return workerhost.Versioning{Mode: mode, Deployment: v.Deployment, BuildID: v.Build()}
}

// versionLine is what `tether-worker --version` prints: the version and
// commit, the build id it registers with its worker deployment by default
// (TETHER_BUILD_ID overrides it), Go and the SDK:
// `tether-worker v1.2.3 (commit 0123456789ab) (build id v1.2.3-0123456789ab) (go1.26.8, temporal sdk v1.51.0)`.
func versionLine() string {
	return fmt.Sprintf("tether-worker %s (build id %s) (%s, temporal sdk %s)", version.Get(), version.BuildID(), runtime.Version(), version.SDK())
}

// flush sends the spans not yet sent and closes the metrics endpoint,
// waiting no longer than a pod's usual grace period allows.
func flush(tel *telemetry.Telemetry, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		logger.Warn("telemetry: not everything was sent before exit", "err", err)
	}
}

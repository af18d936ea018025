// Package cli is the `tether` command: start, follow, answer, inspect,
// resume, rewind, fork and delete graph runs. Exit codes: 0 done, 1 the run
// failed (or a command could not reach what it needed), 2 usage or
// validation error.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/health"
	"github.com/tether-run/tether/internal/render"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/temporalclient"
)

// cliStoreRetry is how long a CLI command waits out a store outage
// (TETHER_STORE_RETRY wins).
const cliStoreRetry = 10 * time.Second

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
	// ExitDetached is --follow interrupted (Ctrl-C): the run goes on.
	ExitDetached = 130
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

func failedErr(err error) error { return &exitError{code: ExitFailed, err: err} }

// app holds what the commands share; connections open lazily so that
// `tether validate` works with no server and no store.
type app struct {
	cfg config.Config
	// out and errOut are what a person reads: everything written to them
	// is shown as render.Terminal shows it, so that nothing an agent, a
	// tool or the store wrote can drive the terminal. raw is stdout as it
	// is, for output a program reads (--json, a diff into a pipe);
	// rawTerminal says it is a terminal.
	out, errOut io.Writer
	raw         io.Writer
	rawTerminal bool
	client      client.Client
	blobs       blob.Store
	runs        *runstore.Store
	tel         *telemetry.Telemetry
	// healthLast is the latest look at Temporal and the workers, shared
	// by the commands of one process (the console's pages run at once).
	healthMu   sync.Mutex
	healthLast health.Report
}

func (a *app) temporal() (client.Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	opts := client.Options{Logger: quietLogger{}}
	if a.cfg.OTLPEndpoint != "" {
		// A run's trace starts at the `tether` command that started it.
		// Set up once: a dial that failed is tried again with the same one.
		if a.tel == nil {
			var err error
			if a.tel, err = telemetry.Setup(context.Background(), telemetry.Options{ServiceName: "tether", Tracing: true}); err != nil {
				fmt.Fprintln(a.errOut, "tether: tracing off:", err)
			}
		}
		opts.Interceptors = a.tel.ClientInterceptors()
	}
	c, err := temporalclient.Dial(a.cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s: %w; start it with `make run` (dev server) or set TEMPORAL_ADDRESS", a.cfg.TemporalAddress, err)
	}
	a.client = c
	return c, nil
}

func (a *app) store(ctx context.Context) (*runstore.Store, error) {
	if a.runs != nil {
		return a.runs, nil
	}
	// A person waits on the CLI: a store that is down is reported after a
	// short retry, not after the workers' two minutes.
	b, err := blob.Open(ctx, a.cfg.BlobURL, a.cfg.StoreOptions(cliStoreRetry, nil)...)
	if err != nil {
		return nil, fmt.Errorf("open run store %s (TETHER_BLOB_URL): %w", a.cfg.BlobURL, err)
	}
	a.blobs = b
	a.runs = runstore.New(b, a.cfg.RunStoreOptions()...)
	return a.runs, nil
}

func (a *app) close() {
	if a.client != nil {
		a.client.Close()
	}
	if a.blobs != nil {
		_ = a.blobs.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.tel.Shutdown(ctx)
}

// Main runs the CLI with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	out, errOut := render.NewTerminalWriter(stdout), render.NewTerminalWriter(stderr)
	defer errOut.Flush()
	defer out.Flush()
	cfg, err := config.FromEnv()
	if err != nil {
		fmt.Fprintln(errOut, "tether:", err)
		return ExitUsage
	}
	a := &app{cfg: cfg, out: out, errOut: errOut, raw: stdout, rawTerminal: isTerminal(stdout)}
	defer a.close()
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errOut)
	err = root.Execute()
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(errOut, "tether:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// Cobra's own errors (unknown flag, wrong arg count) are usage errors.
	return ExitUsage
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "tether",
		Short: "Run agent workflow graphs durably on Temporal",
		Long: `tether starts and drives graph runs on Temporal.

A run is a GraphRun workflow whose workflow ID is the run ID, so the temporal
CLI and Web UI see the same runs. Configuration comes from the environment:
TEMPORAL_ADDRESS (127.0.0.1:7233), TEMPORAL_NAMESPACE (default),
TETHER_BLOB_URL (file://.tether/store) and TETHER_UI (http://127.0.0.1:8233).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		a.runCmd(), a.statusCmd(), a.answerCmd(), a.validateCmd(), a.graphCmd(),
		a.resumeCmd(), a.rewindCmd(), a.forkCmd(), a.deleteCmd(), a.checkpointsCmd(),
		a.workspaceCmd(), a.storeCmd(), a.guideCmd(), a.consoleCmd(),
	)
	root.AddCommand(a.cancelCmd(), a.versionCmd(), a.logsCmd(), a.listCmd(), a.workersCmd(), a.upgradeRunsCmd())
	return root
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Run is the entry point of the tether binary.
func Run() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

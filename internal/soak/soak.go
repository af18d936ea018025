package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/notify/notifytest"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/temporalclient"
	"github.com/tether-run/tether/internal/visitbench"
)

// Options say how hard to push and which faults to inject.
type Options struct {
	// Root is the repository: scripts/cluster.sh and bin/ live there.
	Root string
	// ClusterDir is scripts/cluster.sh's state directory (its pid files
	// say which processes are the workers).
	ClusterDir string
	// Workers is how many workers the cluster runs.
	Workers int
	// Levels are the concurrencies (runs at once) the throughput phase
	// measures, each against the floor; BenchRounds the writer/judge
	// rounds of each of its runs.
	Levels      []int
	BenchRounds int
	// Runs is how many runs the soak starts at once: 3/5 persist loops of
	// Rounds rounds with a human answer, 3/10 tool runs of Rounds edits in
	// a workspace of WorkspaceFiles files, the rest fan-outs.
	Runs           int
	Rounds         int
	WorkspaceFiles int
	// LateRounds is the rounds of the persist loops that ask late (every
	// other one): under an upgrade they must still be visiting when the
	// new build becomes current, however fast the machine; 0 is twice
	// Rounds.
	LateRounds int
	// Faults during the soak.
	Faults Faults
	// Notify runs a notice receiver during the soak, gives every worker
	// TETHER_NOTIFY naming it, and checks each question was notified
	// exactly once (notices.go).
	Notify bool
	// Trace has the workers export their spans to the soak during the
	// throughput phase, which then splits each visit's time by them too.
	Trace bool
	// Dev is the dev server the soak measures instead of a cluster
	// (StartDevServer); nil: the cluster scripts/cluster.sh runs. Its
	// worker exports its spans to Spans, when Trace is set.
	Dev   *DevServer
	Spans *visitbench.Receiver
	// ServerMetrics is the Temporal server's Prometheus endpoint, whose
	// database requests the throughput phase counts per visit ("": none).
	ServerMetrics string
	// Upgrade rolls the cluster onto another build in the middle of the
	// load (upgrade.go); its zero value does not.
	Upgrade Upgrade
	// CLIRuns is how many runs of the load have a persist writer on a
	// real agent CLI (Claude Code against the fake model, cli.go).
	CLIRuns int
	// Deadline bounds the whole soak.
	Deadline time.Duration
	Out      io.Writer
}

// Faults are what the soak breaks while its runs go on.
type Faults struct {
	// KillEvery kills a random worker with SIGKILL this often and starts
	// it again at once with empty disks, at most Kills times (0: no
	// bound); KillEvery 0: never.
	KillEvery time.Duration
	Kills     int
	// RestartTemporal and RestartPostgres restart the server once, at the
	// given time into the soak; 0: never.
	RestartTemporal time.Duration
	RestartPostgres time.Duration
	// StopS3 stops the S3 server at StopS3.At for StopS3.For.
	StopS3 struct{ At, For time.Duration }
}

// Soak is one soak against a running cluster.
type Soak struct {
	o      Options
	cfg    config.Config
	c      client.Client
	blobs  blob.Store
	runs   *runstore.Store
	prefix string
	rng    *rand.Rand
	logMu  sync.Mutex
	// receiver and notifyEnv are the notice receiver and the workers'
	// environment naming it, while Options.Notify has them up.
	receiver  *notifytest.Receiver
	notifyEnv []string
	// spans and traceEnv are the span receiver and the workers'
	// environment naming it, while Options.Trace has them up.
	spans    *visitbench.Receiver
	traceEnv []string
	// model and modelEnv are the fake model the CLI runs talk to and the
	// workers' environment naming it and the CLIs (cli.go).
	model    *fakemodel.Server
	modelEnv []string
	// retired are the workers an upgrade replaces; upgradeDone is closed
	// once the upgrade is over (or when there is none).
	workersMu   sync.Mutex
	retired     map[int]bool
	upgradeDone chan struct{}
}

// workerEnv is the environment the soak gives the workers it (re)starts.
func (s *Soak) workerEnv() []string {
	return append(append(slices.Clone(s.notifyEnv), s.modelEnv...), s.traceEnv...)
}

// New connects to the cluster the environment names (as tether does).
func New(ctx context.Context, o Options) (*Soak, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, err
	}
	c, err := temporalclient.Dial(cfg, client.Options{Logger: quietLogger})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w (is the cluster up? make cluster)", cfg.TemporalAddress, err)
	}
	blobs, err := blob.Open(ctx, cfg.BlobURL, cfg.StoreOptions(2*time.Minute, nil)...)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("open the blob store %s: %w", cfg.BlobURL, err)
	}
	return &Soak{
		o: o, cfg: cfg, c: c, blobs: blobs, runs: runstore.New(blobs, cfg.RunStoreOptions()...),
		prefix:  "soak-" + strings.ToLower(ulid.Make().String()[16:]),
		rng:     rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0)),
		retired: map[int]bool{}, upgradeDone: make(chan struct{}),
	}, nil
}

// Close releases the connections.
func (s *Soak) Close() {
	s.c.Close()
	s.blobs.Close()
}

func (s *Soak) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.o.Out, "%s soak: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// run is one run the soak started, and what it must find at the end.
type run struct {
	id     string
	kind   string // persist, tool, fanout, bench
	rounds int
	files  int
	handle client.WorkflowRun
	result *runapi.GraphRunResult
	err    error
	asked  bool
	// execs are its executions, read back after the load.
	execs []execution
}

// start starts a run of g.
func (s *Soak) start(ctx context.Context, r *run, g *graph.Graph, ws *runstore.WorkspaceState) error {
	h, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: r.id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: r.id, Graph: g, Workspace: ws})
	if err != nil {
		return fmt.Errorf("start run %s: %w", r.id, err)
	}
	r.handle = h
	return nil
}

// wait waits for every run's result, riding out a Temporal outage: only
// the run's own failure ends its wait.
func (s *Soak) wait(ctx context.Context, runs []*run) {
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var res runapi.GraphRunResult
				err := s.c.GetWorkflow(ctx, r.id, "").Get(ctx, &res)
				if err == nil {
					r.result = &res
					return
				}
				var wee *temporal.WorkflowExecutionError
				if errors.As(err, &wee) || ctx.Err() != nil {
					r.err = err
					return
				}
				time.Sleep(time.Second) // the server is restarting
			}
		}()
	}
	wg.Wait()
}

// cluster runs scripts/cluster.sh with args.
func (s *Soak) cluster(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(s.o.Root, "scripts", "cluster.sh")}, args...)...)
	cmd.Env = append(append(os.Environ(), "TETHER_CLUSTER_DIR="+s.o.ClusterDir), s.workerEnv()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster.sh %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// tether runs the tether CLI against the cluster.
func (s *Soak) tether(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.o.Root, "bin", "tether"), args...)
	cmd.Env = os.Environ()
	if s.o.Dev == nil {
		cmd.Env = append(cmd.Env, "TETHER_HOME="+filepath.Join(s.o.ClusterDir, "cli"))
	}
	return cmd.CombinedOutput()
}

// percentile is the p-th percentile (0-100) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

func sortDurations(d []time.Duration) []time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d
}

// quietLogger keeps the SDK's retries of a restarting server out of the
// soak's output; the soak reports what matters itself.
var quietLogger = tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))

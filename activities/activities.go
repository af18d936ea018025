// Package activities holds GraphRun's activities: the only code that
// touches agents, tools, disks and stores. Each is idempotent: every key it
// writes comes from its input (minted by the workflow), never from the
// attempt, so a retry writes the same bytes to the same place.
package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/notify"
	sessionpack "github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/workspace"
)

// MaxOutputText is the longest agent reply an output carries whole.
const MaxOutputText = 256 << 10

// LostAnswerIntro precedes, in a fresh conversation's prompt, the answer
// to a question asked in a conversation that could not be restored, so the
// answer reaches the agent all the same.
const LostAnswerIntro = "Earlier in this visit you asked the user a question; the conversation you asked it in could not be restored. The user's answer:"

// Activities carries the worker's dependencies.
type Activities struct {
	Blobs    blob.Store
	Runs     *runstore.Store
	Backends Backends
	// StateDir holds this worker's live session roots, one per run and
	// backend (runs/<run>/<backend>).
	StateDir string
	// WorkDir holds the runs' working directories.
	WorkDir string
	// WorkdirRoots are the directories below which an agent's absolute
	// workdir may lie (TETHER_WORKDIR_ROOTS); none refuses every absolute
	// workdir.
	WorkdirRoots []string
	// PassEnv names worker environment variables every tool node gets
	// besides the minimal base (cliexec.BaseEnv) and its node's env: the
	// worker's TETHER_PASS_ENV, as the agent CLIs get it.
	PassEnv []string
	// Sandbox confines tool nodes as the agent CLIs are confined (see
	// internal/sandbox); nil runs them unconfined.
	Sandbox *sandbox.Sandbox
	// Workspaces keeps the runs' working directories durable; nil runs
	// every visit in a plain directory that nothing restores or snapshots.
	Workspaces *workspace.Manager
	// Queue is this worker's own task queue.
	Queue  string
	Logger *slog.Logger
	// HeartbeatEvery is how often a running visit heartbeats.
	HeartbeatEvery time.Duration
	// ShutdownGrace is how long a visit runs on once its worker begins to
	// stop; a visit still running then is ended and handed back
	// (ErrTypeWorkerStopping), so that another worker starts it at once.
	ShutdownGrace time.Duration
	// Metrics counts visits and bytes moved; nil counts nothing.
	Metrics *telemetry.Metrics
	// Notifier sends the runs' notices (TETHER_NOTIFY); nil sends none.
	Notifier *notify.Sender
	// Temporal is where CheckRunID looks for other runs under a new run's
	// id; nil looks in the run store only.
	Temporal Executions
	// Pins sets the versioning override of an execution that moves to
	// another build (PinExecution); nil on a worker without a client.
	Pins Pinner
	// Health is whether this worker's store works (health.go); nil is
	// always healthy.
	Health *Health
	// GitHub reaches GitHub for runs started from it (github.go); nil:
	// this worker has no GitHub.
	GitHub *GitHub

	live liveSessions
	// inflight counts this worker's running visits per run: ForgetRun
	// leaves a run alone while one is running.
	inflight inflightRuns
	// maxSessionBlob overrides the cap on a session blob read (tests);
	// zero is the packer's own.
	maxSessionBlob int64
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

// sessionBlobMax is the most a session blob read from the store may hold:
// the largest archive the packer would unpack.
func (a *Activities) sessionBlobMax() int64 {
	if a.maxSessionBlob > 0 {
		return a.maxSessionBlob
	}
	return sessionpack.MaxBlobBytes(sessionpack.DefaultLimits())
}

func mkdirAll(d string) error { return os.MkdirAll(d, 0o700) }

// SaveCheckpoint writes one immutable checkpoint record.
func (a *Activities) SaveCheckpoint(ctx context.Context, req *CheckpointRequest) error {
	if req == nil || req.Checkpoint == nil || req.Checkpoint.RunID == "" || req.Checkpoint.Seq <= 0 {
		return temporal.NewNonRetryableApplicationError("SaveCheckpoint needs a checkpoint with a run id and a positive seq", ErrTypeBadRequest, nil)
	}
	if err := a.Runs.Save(ctx, req.Checkpoint.RunID, req.Checkpoint); err != nil {
		if !errors.Is(err, runstore.ErrSeqTaken) && a.Health.Check(ctx) != nil {
			// This worker's store is broken, not the run's: the workflow
			// hands its task to another worker instead of fail-stopping.
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("save checkpoint %d of run %s on worker %s: %s", req.Checkpoint.Seq, req.Checkpoint.RunID, a.Queue, ErrorText(a.Health.Err())), ErrTypeWorkerUnhealthy, nil)
		}
		return fmt.Errorf("save checkpoint %d of run %s: %w", req.Checkpoint.Seq, req.Checkpoint.RunID, err)
	}
	return nil
}

// DeleteBlobs removes session blobs; a key already gone is success.
func (a *Activities) DeleteBlobs(ctx context.Context, req *DeleteBlobsRequest) error {
	var errs []error
	for _, k := range req.Keys {
		if err := a.Blobs.Delete(ctx, k); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

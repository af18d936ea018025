// Package workerhost assembles a Tether worker: the Temporal workers on the
// shared task queue and on this worker's own queue, with GraphRun and the
// activities registered. The tether-worker binary and the integration tests
// both start workers through it.
package workerhost

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/github/forge"
	"github.com/tether-run/tether/internal/notify"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/treepolicy"
	"github.com/tether-run/tether/internal/workspace"
	"github.com/tether-run/tether/workflows"
)

// Options configure one worker.
type Options struct {
	// ID names this worker; its own task queue is derived from it.
	ID    string
	Blobs blob.Store
	// CheckpointKey authenticates the checkpoints the worker saves
	// (runstore.WithKey); nil writes them unsigned.
	CheckpointKey []byte
	Backends      activities.Backends
	StateDir      string
	WorkDir       string
	// WorkdirRoots are where an agent's absolute workdir may lie
	// (TETHER_WORKDIR_ROOTS); none refuses every absolute workdir.
	WorkdirRoots []string
	// PassEnv names worker environment variables every tool node gets
	// besides the minimal base and its node's env (TETHER_PASS_ENV; the
	// agent CLIs get it through their backends' configuration).
	PassEnv []string
	// Sandbox confines tool nodes (the agent CLIs get it through their
	// backends' configuration); nil runs them unconfined.
	Sandbox *sandbox.Sandbox
	Logger  *slog.Logger
	// MaxConcurrentVisits bounds the activities (agent visits, tools,
	// restores) this worker runs at once on each of its queues; zero means
	// DefaultMaxConcurrentVisits. A visit bound to a busy worker's own
	// queue moves to another worker after WorkerLostAfter.
	MaxConcurrentVisits int
	// DisableEagerActivities makes every activity go through the server's
	// matching instead of running on the worker that scheduled it; tests
	// use it to spread visits over several workers.
	DisableEagerActivities bool
	// WorkspaceLimits bound the runs' workspaces (zero fields: defaults).
	WorkspaceLimits workspace.Limits
	// WorkspaceRedact is what a snapshot does with a credential the run's
	// source did not track (TETHER_REDACT, as for the session packers).
	WorkspaceRedact treepolicy.RedactMode
	// Interceptors wrap the worker's workflows and activities (tracing,
	// tests).
	Interceptors []interceptor.WorkerInterceptor
	// Metrics counts visits and bytes moved; nil counts nothing.
	Metrics *telemetry.Metrics
	// Namespace is the client's namespace, where the worker registers the
	// search attributes runs set (default "default").
	Namespace string
	// ShutdownGrace is how long Stop lets running visits finish before it
	// ends them and hands them back, so that another worker starts them
	// at once (not after a heartbeat timeout). Zero hands them back at
	// once.
	ShutdownGrace time.Duration
	// Notify sends the runs' notices (TETHER_NOTIFY); nil sends none. Every
	// worker of a namespace should have the same endpoints: the worker that
	// runs a workflow task decides which notices a run sends, and any
	// worker may send them.
	Notify *notify.Sender
	// OnHealth, if set, hears when the worker turns unhealthy (its store
	// fails a probe: it takes no visit meanwhile) and healthy again.
	OnHealth func(healthy bool, cause error)
	// Versioning makes the worker a build of a Temporal worker deployment
	// (deployment.go); the zero value is an unversioned worker.
	Versioning Versioning
	// GitHub reaches GitHub for the runs started from it (nil: this worker
	// has no GitHub credentials), and ConsoleURL is the console's public
	// address for the links it writes there.
	GitHub     *forge.Forge
	ConsoleURL string
	// Role splits a worker: RoleAll (the default) runs workflows and
	// activities; RoleWorkflows runs workflows and their local activities
	// (checkpoints) only; RoleActivities runs activities only.
	Role Role
}

// Role is what a worker runs.
type Role int

// Roles.
const (
	RoleAll Role = iota
	RoleWorkflows
	RoleActivities
)

// heartbeatThrottle bounds how long the SDK holds a visit's heartbeat back
// (by default 80% of the heartbeat timeout, 24 s): the heartbeat carries
// the visit's progress, which `tether status` shows.
const heartbeatThrottle = 5 * time.Second

// handBack is the time a visit ended at the end of the shutdown grace has
// to report itself handed back before the worker stops for good.
const handBack = 5 * time.Second

// stickyTimeout is how long a run's next workflow task waits on this
// worker's sticky queue before any worker may take it. The SDK's 5 s is
// what a run paid, after a worker was killed, on top of the heartbeat
// timeout before its lost visit could start again; a worker that lives
// answers its sticky queue within milliseconds, and a miss costs a replay
// of the run's history, not correctness.
const stickyTimeout = time.Second

// DefaultMaxConcurrentVisits keeps one worker from starting more CLIs than
// a small machine can run.
const DefaultMaxConcurrentVisits = 16

// Host is a running worker.
type Host struct {
	ID        string
	Queue     string
	shared    worker.Worker
	own       worker.Worker
	logger    *slog.Logger
	grace     time.Duration
	health    *activities.Health
	stopWatch context.CancelFunc
	// routing is the versioned worker's view of its deployment's routing;
	// nil on an unversioned worker.
	routing *router
}

// Healthy is nil while the worker's store works, else why it does not
// (the worker then takes no visit until it does again).
func (h *Host) Healthy() error { return h.health.Err() }

// Routing is what this worker last read of its deployment's routing, the
// view its runs decide a move on; ok is false on an unversioned worker.
func (h *Host) Routing() (rt workflows.Routing, ok bool) {
	if h.routing == nil {
		return workflows.Routing{}, false
	}
	return h.routing.Routing(), true
}

// DefaultID is hostname-pid, unique per process on a machine.
func DefaultID() string {
	h, err := os.Hostname()
	if err != nil {
		h = "worker"
	}
	return fmt.Sprintf("%s-%d", h, os.Getpid())
}

// Start registers everything and starts polling.
func Start(c client.Client, o Options) (*Host, error) {
	if o.ID == "" {
		o.ID = DefaultID()
	}
	if err := runstore.ValidKey(o.CheckpointKey); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxConcurrentVisits <= 0 {
		o.MaxConcurrentVisits = DefaultMaxConcurrentVisits
	}
	if err := o.Versioning.check(); err != nil {
		return nil, err
	}
	queue := runapi.WorkerQueue(o.ID)
	logger := o.Logger.With("worker", o.ID)
	if err := probeStore(o.Blobs, o.ID); err != nil {
		return nil, err
	}
	health := activities.NewHealth(func(ctx context.Context) error {
		return blob.Probe(ctx, o.Blobs, blob.ProbePrefix(o.ID))
	}, logger, o.OnHealth)
	acts := &activities.Activities{
		Blobs:    o.Blobs,
		Runs:     runstore.New(o.Blobs, runstore.WithKey(o.CheckpointKey)),
		Backends: o.Backends,
		StateDir: o.StateDir,
		WorkDir:  o.WorkDir,
		PassEnv:  o.PassEnv,
		Sandbox:  o.Sandbox,
		Metrics:  o.Metrics,
		Notifier: o.Notify,
		Queue:    queue,
		Logger:   logger,
		Temporal: c,
		Pins:     c,
		Health:   health,
		GitHub:   &activities.GitHub{Forge: o.GitHub, Temporal: c, ConsoleURL: o.ConsoleURL},

		ShutdownGrace: o.ShutdownGrace,
		WorkdirRoots:  o.WorkdirRoots,
	}
	acts.Workspaces = workspace.NewManager(filepath.Join(o.StateDir, "workspaces"), o.Blobs, o.WorkspaceLimits, logger,
		workspace.WithRedact(o.WorkspaceRedact), workspace.WithEvicted(activities.RunForgetter(acts)))
	h := &Host{ID: o.ID, Queue: queue, logger: logger, grace: o.ShutdownGrace, health: health}
	var routing *router
	interceptors := o.Interceptors
	if o.Versioning.Mode != VersioningOff {
		routing = newRouter(c, o.Versioning, logger)
		h.routing = routing
		interceptors = append(slices.Clone(interceptors), workflows.RoutingInterceptor(routing.Routing))
	}
	deployment := o.Versioning.deploymentOptions()
	stopTimeout := o.ShutdownGrace + handBack
	sharedSlots, err := gatedTuner(health, o.MaxConcurrentVisits)
	if err != nil {
		return nil, err
	}
	ownSlots, err := gatedTuner(health, o.MaxConcurrentVisits)
	if err != nil {
		return nil, err
	}
	h.shared = worker.New(c, runapi.TaskQueue, worker.Options{
		WorkerStopTimeout:            stopTimeout,
		StickyScheduleToStartTimeout: stickyTimeout,
		MaxHeartbeatThrottleInterval: heartbeatThrottle,
		Identity:                     o.ID,
		Tuner:                        sharedSlots,
		DisableEagerActivities:       o.DisableEagerActivities || o.Role != RoleAll,
		Interceptors:                 interceptors,
		DisableWorkflowWorker:        o.Role == RoleActivities,
		LocalActivityWorkerOnly:      o.Role == RoleWorkflows,
		DeploymentOptions:            deployment,
	})
	if o.Role != RoleActivities {
		// A run is pinned to the build it started on: it moves only
		// between visits, by continuing as new (workflows/move.go). A
		// notice and a GitHub delivery follow the current build: they
		// have no visit to keep, and a run a delivery starts begins on
		// the current build.
		h.shared.RegisterWorkflowWithOptions(workflows.GraphRun, workflow.RegisterOptions{
			Name: runapi.WorkflowType, VersioningBehavior: o.Versioning.behavior(workflow.VersioningBehaviorPinned)})
		h.shared.RegisterWorkflowWithOptions(workflows.Notice, workflow.RegisterOptions{
			Name: runapi.NoticeWorkflowType, VersioningBehavior: o.Versioning.behavior(workflow.VersioningBehaviorAutoUpgrade)})
		h.shared.RegisterWorkflowWithOptions(workflows.GitHubDelivery, workflow.RegisterOptions{
			Name: github.WorkflowType, VersioningBehavior: o.Versioning.behavior(workflow.VersioningBehaviorAutoUpgrade)})
	}
	h.shared.RegisterActivity(acts)
	h.own = worker.New(c, queue, worker.Options{
		WorkerStopTimeout:            stopTimeout,
		MaxHeartbeatThrottleInterval: heartbeatThrottle,
		Identity:                     o.ID,
		DisableWorkflowWorker:        true,
		Tuner:                        ownSlots,
		Interceptors:                 o.Interceptors,
		// Unversioned: a worker's own queue is one worker's (the visits of
		// runs recorded before one-trip visits), and a version lists
		// every queue its workers poll, which would grow by one per
		// worker ever started.
	})
	h.own.RegisterActivityWithOptions(acts, activity.RegisterOptions{})
	if err := ensureSearchAttributesWithin(c, o.Namespace, searchAttributeWait); err != nil {
		o.Logger.Warn("runs will not set Tether's search attributes; register them with `temporal operator search-attribute create` (see README)", "error", err)
	} else {
		workflows.SetSearchAttributesReady(true)
	}
	if err := h.own.Start(); err != nil {
		return nil, fmt.Errorf("start worker on %s: %w", queue, err)
	}
	if err := h.shared.Start(); err != nil {
		h.own.Stop()
		return nil, fmt.Errorf("start worker on %s: %w", runapi.TaskQueue, err)
	}
	watch, stopWatch := context.WithCancel(context.Background())
	h.stopWatch = stopWatch
	go health.Watch(watch, reprobeEvery)
	if routing != nil {
		routing.waitPromoted(watch)
		go routing.watch(watch)
		v := routing.Routing()
		o.Logger.Info("worker started", "id", o.ID, "queues", []string{runapi.TaskQueue, queue}, "state_dir", o.StateDir,
			"deployment", o.Versioning.Deployment, "build", o.Versioning.BuildID, "versioning", o.Versioning.Mode.String(), "current_build", v.Current)
		return h, nil
	}
	o.Logger.Info("worker started", "id", o.ID, "queues", []string{runapi.TaskQueue, queue}, "state_dir", o.StateDir,
		"versioning", "off: an unversioned worker; runs are not pinned to a build (TETHER_VERSIONING)")
	return h, nil
}

// searchAttributeWait is how long a starting worker retries registering
// the search attributes: a namespace created a moment ago (a cluster coming
// up beside its workers) is "not found" until the frontend's namespace
// cache refreshes, about 10 s later.
const searchAttributeWait = 30 * time.Second

// ensureSearchAttributesWithin retries ensureSearchAttributes for up to
// wait; runs a worker starts read once whether the attributes exist, so a
// first failure would leave them without it for good.
func ensureSearchAttributesWithin(c client.Client, namespace string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := ensureSearchAttributes(c, namespace)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Second)
	}
}

// ensureSearchAttributes registers the search attributes runs set
// (workflows.SearchAttributeTypes) in the namespace, unless they are there.
func ensureSearchAttributes(c client.Client, namespace string) error {
	if namespace == "" {
		namespace = "default"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of namespace %s: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range workflows.SearchAttributeTypes {
		got, ok := have.GetCustomAttributes()[name]
		if !ok {
			missing[name] = typ
			continue
		}
		if got != typ {
			return fmt.Errorf("search attribute %s of namespace %s has type %s, Tether needs %s", name, namespace, got, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing}); err != nil {
		return fmt.Errorf("register search attributes in namespace %s: %w", namespace, err)
	}
	return nil
}

// Stop stops taking work, lets running visits finish for up to the
// shutdown grace, then ends those still running and hands them back
// (WorkerStopping), and returns once they reported so. Both queues stop
// at once, so the grace is not paid twice.
func (h *Host) Stop() {
	h.logger.Info("stopping: no new visits; running visits may finish", "grace", h.grace)
	var wg sync.WaitGroup
	for _, w := range []worker.Worker{h.shared, h.own} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Stop()
		}()
	}
	wg.Wait()
	if h.stopWatch != nil {
		h.stopWatch()
	}
	h.logger.Info("stopped")
}

package workerhost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/workflows"
)

// Versioning is how a worker joins Temporal's worker deployments
// (docs/operations.md, "Upgrades"): every Temporal worker of the host
// registers as build BuildID of deployment Deployment, GraphRun is pinned
// to the build a run started on and the notices follow the current build.
// The zero value is an unversioned worker.
type Versioning struct {
	// Mode is VersioningOff (the zero value), VersioningAuto or
	// VersioningManual.
	Mode       VersioningMode
	Deployment string
	BuildID    string
	// RoutingEvery is how often the worker reads its deployment's routing
	// (which build is current, which ramps): what a run compares its own
	// build with between two visits. Zero: DefaultRoutingEvery.
	RoutingEvery time.Duration
}

// VersioningMode says whether a worker is versioned and whether it may
// change its deployment's routing.
type VersioningMode int

// Versioning modes (config's TETHER_VERSIONING: off, auto, manual).
const (
	// VersioningOff: an unversioned worker.
	VersioningOff VersioningMode = iota
	// VersioningAuto: a versioned worker that makes its build the
	// deployment's current one when the deployment has none, or when no
	// worker of the current build polls any more.
	VersioningAuto
	// VersioningManual: a versioned worker that leaves routing to others.
	VersioningManual
)

func (m VersioningMode) String() string {
	switch m {
	case VersioningAuto:
		return "auto"
	case VersioningManual:
		return "manual"
	}
	return "off"
}

// DefaultRoutingEvery is how often a versioned worker reads its
// deployment's routing: a run moves to a new current build at most this
// long after it became current, at its next safe point.
const DefaultRoutingEvery = 5 * time.Second

// pollerAlive is how recently a poller must have asked for work to count
// as a worker that is up (a worker long-polls, asking again within about
// a minute, and Temporal lists a poller for minutes after it is gone).
const pollerAlive = 90 * time.Second

// promoteWait bounds how long Start waits for a worker that may make its
// build current to do so, so that a run started right after Start is
// dispatched at once (its task waits for a current build otherwise).
const promoteWait = 20 * time.Second

// deploymentOptions are the SDK's options of a worker of v.
func (v Versioning) deploymentOptions() worker.DeploymentOptions {
	if v.Mode == VersioningOff {
		return worker.DeploymentOptions{}
	}
	return worker.DeploymentOptions{
		UseVersioning: true,
		Version:       worker.WorkerDeploymentVersion{DeploymentName: v.Deployment, BuildID: v.BuildID},
	}
}

// behavior is the versioning behavior a workflow registers with: none on
// an unversioned worker.
func (v Versioning) behavior(b workflow.VersioningBehavior) workflow.VersioningBehavior {
	if v.Mode == VersioningOff {
		return workflow.VersioningBehaviorUnspecified
	}
	return b
}

// check refuses a versioned worker without a deployment or a build.
func (v Versioning) check() error {
	if v.Mode != VersioningOff && (v.Deployment == "" || v.BuildID == "") {
		return fmt.Errorf("a versioned worker needs a deployment and a build id (TETHER_DEPLOYMENT, TETHER_BUILD_ID), got %q and %q", v.Deployment, v.BuildID)
	}
	return nil
}

// router keeps what the worker knows of its deployment's routing, for the
// runs it works on (workflows.WithRouting), and in VersioningAuto makes
// its build current when nothing else serves new runs.
type router struct {
	c      client.Client
	v      Versioning
	logger *slog.Logger

	mu   sync.Mutex
	view workflows.Routing
}

func newRouter(c client.Client, v Versioning, logger *slog.Logger) *router {
	if v.RoutingEvery <= 0 {
		v.RoutingEvery = DefaultRoutingEvery
	}
	return &router{c: c, v: v, logger: logger,
		view: workflows.Routing{Deployment: v.Deployment, Build: v.BuildID}}
}

// Routing is the latest view; a workflow reads it through a side effect.
func (r *router) Routing() workflows.Routing {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.view
}

// watch reads the routing every RoutingEvery until ctx ends.
func (r *router) watch(ctx context.Context) {
	t := time.NewTicker(r.v.RoutingEvery)
	defer t.Stop()
	for {
		r.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refresh reads the routing once, and promotes the build if it may and
// should.
func (r *router) refresh(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h := r.c.WorkerDeploymentClient().GetHandle(r.v.Deployment)
	d, err := h.Describe(rctx, client.WorkerDeploymentDescribeOptions{})
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		// No worker of the deployment registered yet (this one's pollers
		// register it within a second).
	case err != nil:
		if ctx.Err() == nil {
			r.logger.Debug("could not read the deployment's routing; keeping the last one", "deployment", r.v.Deployment, "error", err)
		}
		return
	default:
		r.set(d.Info.RoutingConfig)
	}
	if r.v.Mode == VersioningAuto {
		if err == nil {
			r.promote(rctx, h, d)
		}
	}
}

func (r *router) set(rc client.WorkerDeploymentRoutingConfig) {
	view := workflows.Routing{Deployment: r.v.Deployment, Build: r.v.BuildID, Changed: rc.CurrentVersionChangedTime.UTC()}
	if rc.CurrentVersion != nil {
		view.Current = rc.CurrentVersion.BuildID
	}
	if rc.RampingVersion != nil && rc.RampingVersionPercentage > 0 {
		view.Ramping = rc.RampingVersion.BuildID
	}
	r.mu.Lock()
	old := r.view
	r.view = view
	r.mu.Unlock()
	if old.Current != view.Current || old.Ramping != view.Ramping {
		r.logger.Info("deployment routing", "deployment", view.Deployment, "current", view.Current, "ramping", view.Ramping, "this_build", view.Build)
	}
}

// promote makes this build the deployment's current one when there is
// none, or when no worker of the current build polls any more.
func (r *router) promote(ctx context.Context, h client.WorkerDeploymentHandle, d client.WorkerDeploymentDescribeResponse) {
	cur := d.Info.RoutingConfig.CurrentVersion
	if cur != nil && cur.BuildID == r.v.BuildID {
		return
	}
	why := fmt.Sprintf("deployment %s had no current build", r.v.Deployment)
	if cur != nil {
		live, err := r.livePollers(ctx, cur.BuildID)
		if err != nil || live > 0 {
			return
		}
		why = fmt.Sprintf("no worker of deployment %s's current build %s polls any more", r.v.Deployment, cur.BuildID)
	}
	if !r.registered(d) {
		return // this worker's pollers register the version within a second
	}
	_, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{
		BuildID: r.v.BuildID, ConflictToken: d.ConflictToken, Identity: "tether-worker " + r.v.BuildID,
	})
	if err != nil {
		r.logger.Debug("could not make this build current; trying again", "error", err)
		return
	}
	r.logger.Info("this build is now the deployment's current one: "+why, "deployment", r.v.Deployment, "build", r.v.BuildID)
	r.refreshView(ctx, h)
}

// registered reports whether d lists this worker's version yet.
func (r *router) registered(d client.WorkerDeploymentDescribeResponse) bool {
	for _, s := range d.Info.VersionSummaries {
		if s.Version.BuildID == r.v.BuildID {
			return true
		}
	}
	return false
}

func (r *router) refreshView(ctx context.Context, h client.WorkerDeploymentHandle) {
	if d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{}); err == nil {
		r.set(d.Info.RoutingConfig)
	}
}

// livePollers counts the workers of build that polled Tether's task queue
// for workflow tasks lately.
func (r *router) livePollers(ctx context.Context, build string) (int, error) {
	d, err := r.c.DescribeTaskQueue(ctx, workflows.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range d.GetPollers() {
		o := p.GetDeploymentOptions()
		if o.GetDeploymentName() == r.v.Deployment && o.GetBuildId() == build &&
			p.GetLastAccessTime() != nil && time.Since(p.GetLastAccessTime().AsTime()) < pollerAlive {
			n++
		}
	}
	return n, nil
}

// waitPromoted waits, at most promoteWait, until the deployment has a
// current build, for a worker that may make its own build current: a run
// started right after Start is then dispatched at once.
func (r *router) waitPromoted(ctx context.Context) {
	if r.v.Mode != VersioningAuto {
		return
	}
	deadline := time.NewTimer(promoteWait)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		r.refresh(ctx)
		if r.Routing().Current != "" {
			return
		}
		select {
		case <-deadline.C:
			r.logger.Warn("the deployment has no current build yet: new runs wait until one is set (temporal worker deployment set-current-version)", "deployment", r.v.Deployment)
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

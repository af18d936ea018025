package workerhost

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/runapi"
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

// refresh reads the routing once, from Tether's task queue as Temporal's
// matching service routes it (DescribeTaskQueue: its pollers and its
// current and ramping builds, cheap, unlike a query of the deployment's
// own workflow), and promotes the build if it may and should.
func (r *router) refresh(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := r.c.DescribeTaskQueue(rctx, runapi.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		if ctx.Err() == nil {
			r.logger.Debug("could not read the deployment's routing; keeping the last one", "deployment", r.v.Deployment, "error", err)
		}
		return
	}
	view := r.viewOf(d)
	r.set(view)
	if r.v.Mode != VersioningAuto || view.Current == r.v.BuildID {
		return
	}
	why := fmt.Sprintf("deployment %s had no current build", r.v.Deployment)
	if view.Current != "" {
		if livePollers(d, r.v.Deployment, view.Current) > 0 {
			return
		}
		why = fmt.Sprintf("no worker of deployment %s's current build %s polls any more", r.v.Deployment, view.Current)
	}
	r.promote(rctx, why)
}

// viewOf is the routing d says, as this worker sees it.
func (r *router) viewOf(d *workflowservice.DescribeTaskQueueResponse) workflows.Routing {
	view := workflows.Routing{Deployment: r.v.Deployment, Build: r.v.BuildID}
	vi := d.GetVersioningInfo()
	if cur := vi.GetCurrentDeploymentVersion(); cur.GetDeploymentName() == r.v.Deployment {
		view.Current = cur.GetBuildId()
	}
	if ramp := vi.GetRampingDeploymentVersion(); ramp.GetDeploymentName() == r.v.Deployment && vi.GetRampingVersionPercentage() > 0 {
		view.Ramping = ramp.GetBuildId()
	}
	if t := vi.GetUpdateTime(); t != nil {
		view.Changed = t.AsTime().UTC()
	}
	return view
}

func (r *router) set(view workflows.Routing) {
	r.mu.Lock()
	old := r.view
	r.view = view
	r.mu.Unlock()
	if old.Current != view.Current || old.Ramping != view.Ramping {
		r.logger.Info("deployment routing", "deployment", view.Deployment, "current", view.Current, "ramping", view.Ramping, "this_build", view.Build)
	}
}

// promote makes this build the deployment's current one, without waiting
// for this worker's pollers to register the version (they are about to),
// and whatever queues the old build had besides Tether's shared one
// (per-worker queues no run needs any more).
func (r *router) promote(ctx context.Context, why string) {
	_, err := r.c.WorkerDeploymentClient().GetHandle(r.v.Deployment).SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{
		BuildID: r.v.BuildID, Identity: "tether-worker " + r.v.BuildID,
		AllowNoPollers: true, IgnoreMissingTaskQueues: true,
	})
	if err != nil {
		r.logger.Debug("could not make this build current; trying again", "error", err)
		return
	}
	r.logger.Info("this build is now the deployment's current one: "+why, "deployment", r.v.Deployment, "build", r.v.BuildID)
	view := r.Routing()
	view.Current, view.Changed = r.v.BuildID, time.Now().UTC()
	r.set(view)
}

// livePollers counts the workers of build of deployment that polled the
// queue d describes lately.
func livePollers(d *workflowservice.DescribeTaskQueueResponse, deployment, build string) int {
	n := 0
	for _, p := range d.GetPollers() {
		o := p.GetDeploymentOptions()
		if o.GetDeploymentName() == deployment && o.GetBuildId() == build &&
			p.GetLastAccessTime() != nil && time.Since(p.GetLastAccessTime().AsTime()) < pollerAlive {
			n++
		}
	}
	return n
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

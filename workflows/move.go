package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/runapi"
)

// A run is pinned to the build of Tether it started on (a Temporal worker
// deployment version: workerhost registers GraphRun as Pinned), so it only
// ever replays on the workflow code that wrote its history. When its
// deployment stops routing new runs to that build (another build became
// current), the run moves to the current build at a safe point, never in
// the middle of a visit (changeMoveToCurrent):
//
//   - between two visits, at the top of run's loop, once the worker that
//     runs it has seen the new routing (workerhost reads it every few
//     seconds);
//   - while it waits for a person on the trunk (a human node, or an
//     agent's question), when it is asked to check (the upgrade signal,
//     `tether upgrade-runs`): a waiting run has no workflow task of its
//     own to notice the change with.
//
// It moves by continuing as new with its checkpoint, as a long loop does,
// and the next execution's input says why (Move). Temporal 1.29 starts an
// execution continued from a pinned one on the same build, and has no way
// to tell a workflow that its target build changed; so the new execution's
// first step, before anything else, pins itself to the target build
// (UpdateWorkflowExecutionOptions with a pinned versioning override, the
// PinExecution local activity) and waits on a timer, whose firing the
// server hands to a worker of the target build. Only that prologue is ever
// replayed by two builds: it is a contract between them, and changes only
// behind a new version of changeMoveToCurrent.

// Routing is what the worker running a workflow task knows of its worker
// deployment: its own build and the builds the deployment routes new runs
// to (workerhost keeps it up to date). A run reads it through a mutable
// side effect, so its history records each routing it acted on.
type Routing struct {
	Deployment string `json:"deployment,omitempty"`
	// Build is this worker's build id; empty on an unversioned worker.
	Build string `json:"build,omitempty"`
	// Current and Ramping are the deployment's current and ramping builds
	// (empty: none).
	Current string `json:"current,omitempty"`
	Ramping string `json:"ramping,omitempty"`
	// Changed is when the current build last changed, as Temporal says.
	Changed time.Time `json:"changed,omitzero"`
}

// moveTarget is the build a run on r.Build moves to: the current one, when
// the deployment routes new runs neither to r.Build as current nor as
// ramping. A run on a ramping build stays: the ramp is its trial.
func (r Routing) moveTarget() string {
	if r.Build == "" || r.Current == "" || r.Current == r.Build || r.Ramping == r.Build {
		return ""
	}
	return r.Current
}

type routingKey struct{}

// RoutingInterceptor gives every workflow a worker runs src, the worker's
// view of its deployment's routing (workerhost's versioned workers use
// it). A workflow without one sees an unversioned worker.
func RoutingInterceptor(src func() Routing) interceptor.WorkerInterceptor {
	return &routingInterceptor{src: src}
}

type routingInterceptor struct {
	interceptor.WorkerInterceptorBase
	src func() Routing
}

func (i *routingInterceptor) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &routingInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, src: i.src}
}

type routingInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	src func() Routing
}

func (i *routingInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	return i.Next.ExecuteWorkflow(workflow.WithValue(ctx, routingKey{}, i.src), in)
}

// routingSideEffect names the mutable side effect a run reads its
// worker's routing through.
const routingSideEffect = "tether-routing"

// routing is the routing of the worker running this task, as the run's
// history records it (a marker only when it changed).
func (r *runImpl) routing(ctx workflow.Context) Routing {
	var rt Routing
	v := workflow.MutableSideEffect(ctx, routingSideEffect, func(ctx workflow.Context) any {
		if src, ok := ctx.Value(routingKey{}).(func() Routing); ok && src != nil {
			return src()
		}
		return Routing{}
	}, func(a, b any) bool {
		x, _ := a.(Routing)
		y, _ := b.(Routing)
		return x.Deployment == y.Deployment && x.Build == y.Build && x.Current == y.Current && x.Ramping == y.Ramping && x.Changed.Equal(y.Changed)
	})
	if err := v.Get(&rt); err != nil {
		workflow.GetLogger(ctx).Warn("could not read the worker's deployment routing; staying on this build", "error", err.Error())
		return Routing{}
	}
	return rt
}

// moveDue is the move this run should make now, or nil: its deployment no
// longer routes new runs to its build. A routing older than the one the
// run moved on, or than the one the upgrade signal was sent on (a worker
// that has not read the new routing yet), is not acted on, so a run never
// moves back on a stale view: `tether upgrade-runs --replay` pins a run
// to the current build and signals it, and the worker of that build may
// still read the build before as current (changeMoveOnFreshRouting). It
// also returns the routing it read.
func (r *runImpl) moveDue(ctx workflow.Context) (*runapi.Move, Routing) {
	r.upgradeAsked = false
	if workflow.GetVersion(ctx, changeMoveToCurrent, workflow.DefaultVersion, versionMoveToCurrent) != versionMoveToCurrent {
		return nil, Routing{}
	}
	rt := r.routing(ctx)
	to := rt.moveTarget()
	if to == "" {
		return nil, rt
	}
	if mv := r.in.Move; mv != nil && !mv.Since.IsZero() && rt.Changed.Before(mv.Since) {
		return nil, rt
	}
	// Asked only where it matters, so a run that never meets a stale
	// routing records no marker for it.
	if rt.Changed.Before(r.upgradeSince) && workflow.GetVersion(ctx, changeMoveOnFreshRouting, workflow.DefaultVersion, versionMoveOnFreshRouting) == versionMoveOnFreshRouting {
		return nil, rt
	}
	return &runapi.Move{
		Deployment: rt.Deployment, From: rt.Build, To: to, Since: rt.Changed,
		Reason: fmt.Sprintf("deployment %s routes new runs to build %s now, not to this run's build %s", rt.Deployment, to, rt.Build),
	}, rt
}

// errMove unwinds a trunk wait the run leaves to move (visit records no
// step for it; run continues as new).
type errMove struct{ move *runapi.Move }

func (e *errMove) Error() string { return "moving to build " + e.move.To + ": " + e.move.Reason }

// moveOf is the move err carries, or nil.
func moveOf(err error) *runapi.Move {
	var m *errMove
	if errors.As(err, &m) {
		return m.move
	}
	return nil
}

// receiveUpgrade takes the upgrade signal: a waiting run checks its
// routing when it gets one (a run between visits checks anyway).
func (r *runImpl) receiveUpgrade(ctx workflow.Context) {
	receiveEach(ctx, runapi.SignalUpgrade, func(_ workflow.Context, u runapi.Upgrade) {
		r.upgradeAsked = true
		if u.Since.After(r.upgradeSince) {
			r.upgradeSince = u.Since
		}
	})
}

// movableWait reports whether the questions of node that the run waits
// for are a trunk pause, which a move carries in the checkpoint (a
// branch's questions live in memory only: a run waiting inside a fan-out
// moves after the join).
func (r *runImpl) movableWait(node string) bool {
	p := r.cp.Pause
	return p != nil && p.NodeID == node && len(r.current) == 1 && r.current[0] == node
}

// awaitAnswers waits until every question of mine is answered or, on a
// trunk pause, until a move is due (then it returns an errMove).
func (r *runImpl) awaitAnswers(ctx workflow.Context, node string, mine []*question) error {
	answered := func() bool {
		for _, q := range mine {
			if !q.Answered {
				return false
			}
		}
		return true
	}
	movable := r.movableWait(node)
	stale := 0
	for {
		if err := workflow.Await(ctx, func() bool { return answered() || (movable && r.upgradeAsked) }); err != nil {
			return err
		}
		if answered() {
			return nil
		}
		since := r.upgradeSince
		mv, rt := r.moveDue(ctx)
		if mv != nil {
			return &errMove{move: mv}
		}
		// Asked by someone who read a newer routing than this worker
		// has: look again once it has read it, for a few seconds at most.
		if rt.Changed.Before(since) && stale < maxStaleChecks {
			stale++
			ok, err := workflow.AwaitWithTimeout(ctx, staleCheck, answered)
			if err != nil {
				return err
			}
			if !ok {
				r.upgradeAsked = true
			}
			continue
		}
		stale = 0
	}
}

// A waiting run asked to move by someone who read a newer routing than
// its worker has looks again every staleCheck, maxStaleChecks times.
const (
	staleCheck     = time.Second
	maxStaleChecks = 20
)

// Arrival: the prologue of an execution that a move started.
const (
	// arrivalTimer is how long the new execution waits after pinning
	// itself for its next task, which the server gives a worker of the
	// target build; maxArrivalWaits bounds the waits (a worker of the old
	// build that still took the task, as a task handed back with a
	// completion can be).
	arrivalTimer    = time.Second
	maxArrivalWaits = 30
)

// arrive is the prologue of an execution a move started (in.Move): it
// pins the execution to the target build and waits until a worker of that
// build runs it. Answers sent meanwhile are taken: the questions of the
// pause it carries are known at once.
func (r *runImpl) arrive(ctx workflow.Context) {
	mv := r.in.Move
	if mv == nil {
		return
	}
	if p := r.cp.Pause; p != nil {
		r.register(p.NodeID, p.Questions)
	}
	if workflow.GetVersion(ctx, changeMoveToCurrent, workflow.DefaultVersion, versionMoveToCurrent) != versionMoveToCurrent {
		return
	}
	log := workflow.GetLogger(ctx)
	if r.ownBuild(ctx) == mv.To {
		return
	}
	if err := r.pin(ctx, mv, mv.To); err != nil {
		log.Warn("could not pin the run to its new build; it stays on this one and moves at its next safe point", "to", mv.To, "error", activities.ErrorText(err))
		return
	}
	for i := 0; i < maxArrivalWaits; i++ {
		timer := workflow.NewTimerWithOptions(ctx, arrivalTimer, workflow.TimerOptions{Summary: "wait for a worker of build " + mv.To + " to take the run"})
		if err := timer.Get(ctx, nil); err != nil {
			return
		}
		if r.ownBuild(ctx) == mv.To {
			log.Info("moved to the deployment's current build", "from", mv.From, "to", mv.To, "reason", mv.Reason)
			return
		}
	}
	// Still on the old build: let the run go on here, unpinned, rather
	// than have the target build replay what this one does next.
	log.Warn("no worker of the new build took the run; it stays on this build and moves at its next safe point", "to", mv.To)
	if err := r.pin(ctx, mv, ""); err != nil {
		log.Warn("could not unpin the run", "error", activities.ErrorText(err))
	}
}

// ownBuild is the build of the worker running this task, recorded.
func (r *runImpl) ownBuild(ctx workflow.Context) string {
	var build string
	if err := workflow.SideEffect(ctx, func(ctx workflow.Context) any {
		if src, ok := ctx.Value(routingKey{}).(func() Routing); ok && src != nil {
			return src().Build
		}
		return ""
	}).Get(&build); err != nil {
		return ""
	}
	return build
}

// pin sets (build != "") or removes (build == "") this execution's pinned
// versioning override, in a local activity.
func (r *runImpl) pin(ctx workflow.Context, mv *runapi.Move, build string) error {
	summary := fmt.Sprintf("pin the run to build %s of deployment %s (%s)", build, mv.Deployment, oneLine(mv.Reason, 160))
	if build == "" {
		summary = "unpin the run from build " + mv.To
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary:             summary,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, MaximumAttempts: 5},
	})
	info := workflow.GetInfo(ctx)
	req := &activities.PinRequest{
		WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		Deployment: mv.Deployment, BuildID: build,
	}
	return workflow.ExecuteLocalActivity(lctx, activities.PinExecutionName, req).Get(ctx, nil)
}

// Package upgradeprobe is a test-only change of workflow behaviour: a
// workflow interceptor under which GraphRun runs one more activity before
// each visit. A build with it (tether-worker built with the
// tether_upgrade_probe tag; the upgrade tests' workers) writes histories
// that a build without it cannot replay, and cannot replay theirs: the
// change an unversioned rolling upgrade would fail on, and a versioned one
// must carry every run across without a replay (docs/testing.md, "A
// rolling upgrade"). No product build links it.
package upgradeprobe

import (
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/runapi"
)

// Summary names the probe's activity in a history and the Web UI.
const Summary = "upgrade probe: this build's new activity"

// Activity is the probe's activity: the worker's notice endpoints, which
// reads nothing but the worker's own settings.
const Activity = "NoticeEndpoints"

// New is the interceptor; skip, when set, leaves the workflows whose id it
// accepts as they are.
func New(skip func(workflowID string) bool) interceptor.WorkerInterceptor {
	return &probe{skip: skip}
}

type probe struct {
	interceptor.WorkerInterceptorBase
	skip func(string) bool
}

func (p *probe) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &inbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, p: p}
}

type inbound struct {
	interceptor.WorkflowInboundInterceptorBase
	p *probe
}

func (i *inbound) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&outbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}, p: i.p})
}

type outbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	p *probe
}

func (o *outbound) ExecuteActivity(ctx workflow.Context, typ string, args ...any) workflow.Future {
	info := workflow.GetInfo(ctx)
	if (typ == "Visit" || typ == "VisitBranch") && info.WorkflowType.Name == runapi.WorkflowType &&
		(o.p.skip == nil || !o.p.skip(info.WorkflowExecution.ID)) {
		pctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{Summary: Summary, TaskQueue: runapi.TaskQueue, StartToCloseTimeout: time.Minute})
		_ = o.Next.ExecuteActivity(pctx, Activity).Get(ctx, nil)
	}
	return o.Next.ExecuteActivity(ctx, typ, args...)
}

package workflows

import (
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/notify"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// A run tells people when it needs them or ends (changeNotices): each
// notice to each endpoint is a Notice workflow of its own, started as a
// child that outlives the run (ParentClosePolicy ABANDON), whose activity
// retries on its own schedule. The run never waits for a receiver: it
// waits only for its notices' workflows to have started, and only before
// it closes or continues as new. A notice's workflow id is derived from
// the run, the event (a question and when it was asked, or the checkpoint
// a run ended at) and the endpoint, and Temporal refuses a second
// workflow with that id: a worker lost mid-task, a workflow task run
// again, a continue-as-new or a resume never sends a notice twice.

// notices is what one execution knows of its notices.
type notices struct {
	// checked says the endpoints were asked for (once per execution).
	checked   bool
	endpoints []activities.NoticeEndpoint
	// started are the notices' start futures, awaited before the run
	// closes.
	started []workflow.ChildWorkflowFuture
}

// Notice delivery: an attempt bounded by the request's own time, retried
// with exponential backoff up to every noticeMaxInterval for
// noticePatience in all; the workflow itself is bounded a little beyond.
const (
	noticeAttempt     = 20 * time.Second
	noticeHeartbeat   = 5 * time.Second
	noticeFirstRetry  = time.Second
	noticeMaxInterval = 5 * time.Minute
	noticePatience    = 24 * time.Hour
	noticeTimeout     = noticePatience + time.Hour
)

// Notice is the workflow that delivers one notice to one endpoint.
func Notice(ctx workflow.Context, n *notify.Notice) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:                fmt.Sprintf("send %s notice of run %s to %s", n.Event, n.Run, n.Endpoint),
		TaskQueue:              runapi.TaskQueue,
		StartToCloseTimeout:    noticeAttempt,
		HeartbeatTimeout:       noticeHeartbeat,
		ScheduleToCloseTimeout: noticePatience,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        noticeFirstRetry,
			BackoffCoefficient:     2,
			MaximumInterval:        noticeMaxInterval,
			NonRetryableErrorTypes: []string{activities.ErrTypeNoticeRefused, activities.ErrTypeBadRequest},
		},
	})
	return workflow.ExecuteActivity(actx, acts.Notify, n).Get(ctx, nil)
}

// noticeEndpoints are the endpoints the worker running this workflow task
// has, asked once per execution through a local activity (so a replay
// sees the same); none for a run recorded before notices.
func (r *runImpl) noticeEndpoints(ctx workflow.Context) []activities.NoticeEndpoint {
	if r.notices.checked {
		return r.notices.endpoints
	}
	r.notices.checked = true
	if !r.at(ctx, changeNotices, versionNotices) {
		return nil
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:             "read the worker's notice endpoints",
	})
	var eps []activities.NoticeEndpoint
	if err := workflow.ExecuteLocalActivity(lctx, activities.NoticeEndpointsName).Get(ctx, &eps); err != nil {
		workflow.GetLogger(ctx).Warn("could not read this worker's notice endpoints; the run sends no notices in this execution", "error", err.Error())
		return nil
	}
	r.notices.endpoints = eps
	return eps
}

// notice starts the notice of event (whose key names this occurrence of
// it) to every endpoint that both its own filter and the graph's notify:
// routes send it to. It does not wait.
func (r *runImpl) notice(ctx workflow.Context, event, key string, n notify.Notice) {
	for _, ep := range r.noticeEndpoints(ctx) {
		if !(notify.Endpoint{Events: ep.Events}).Wants(event) || !r.g.Notify.Sends(event, ep.Name) {
			continue
		}
		n := n
		n.Endpoint, n.Event, n.Run, n.Graph, n.Time = ep.Name, event, r.cp.RunID, r.g.Name, workflow.Now(ctx)
		n.Key = notify.Key(r.cp.RunID, key, ep.Name)
		if t := r.cp.GitHub; t != nil {
			// Runs started from GitHub only: their notices' input says
			// where a github endpoint posts them.
			n.Thread = &notify.Thread{Repo: t.Repo, Number: t.Issue, Installation: t.Installation}
			if t.PullRequest > 0 {
				n.Thread.Number = t.PullRequest
			}
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:               fmt.Sprintf("%s/notice/%s/%s", r.cp.RunID, key, ep.Name),
			TaskQueue:                runapi.TaskQueue,
			ParentClosePolicy:        enumspb.PARENT_CLOSE_POLICY_ABANDON,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			WorkflowExecutionTimeout: noticeTimeout,
			StaticSummary:            fmt.Sprintf("%s notice of run %s to %s", event, r.cp.RunID, ep.Name),
		})
		r.notices.started = append(r.notices.started, workflow.ExecuteChildWorkflow(cctx, runapi.NoticeWorkflowType, &n))
	}
}

// noticeQuestions sends one notice per question not yet noticed, and
// marks each in qs (and so in the pause the checkpoint saves), so that a
// run resumed while it waits does not send it again. A question of a
// human node carries the node's options.
func (r *runImpl) noticeQuestions(ctx workflow.Context, node string, qs []runstore.Question) {
	for i := range qs {
		q := &qs[i]
		if q.Notice == "" {
			q.Notice = r.earlierNotice(q.ID)
		}
		if q.Notice == "" {
			if len(r.noticeEndpoints(ctx)) == 0 {
				return
			}
			q.Notice = fmt.Sprintf("%s/%s/%d", graph.NotifyWaiting, q.ID, r.cp.Seq)
			// The notice's key names this asking; its answer links
			// carry it, and answer no other (internal/answerlink).
			nq := &notify.Question{ID: q.ID, Text: q.Text, Asking: q.Notice}
			if n, ok := r.g.Node(node); ok && n.Kind == graph.KindHuman {
				nq.Options = n.Options
			}
			r.notice(ctx, graph.NotifyWaiting, q.Notice, notify.Notice{Node: node, Question: nq, Status: runstore.StatusWaiting})
		}
		if known := r.lookup(q.ID); known != nil {
			known.Notice = q.Notice
		}
	}
}

// earlierNotice is the notice already sent for question id, when the run
// was restored from a checkpoint taken while it waited for it.
func (r *runImpl) earlierNotice(id string) string {
	if p := r.cp.Pause; p != nil {
		for _, q := range p.Questions {
			if q.ID == id {
				return q.Notice
			}
		}
	}
	return ""
}

// askAgainIfRewound: a run rewound to a checkpoint taken while it waited
// for a question asks it again (changeRewoundQuestions): it forgets the
// notice sent before the rewind, so that people are told anew, with
// answer links that name this asking, and the links sent before, one of
// which may have answered the question already, answer nothing.
func (r *runImpl) askAgainIfRewound(ctx workflow.Context) {
	p := r.cp.Pause
	if !r.rewound || p == nil || !slices.ContainsFunc(p.Questions, func(q runstore.Question) bool { return q.Notice != "" }) {
		return
	}
	if !r.at(ctx, changeRewoundQuestions, versionRewoundQuestions) {
		return
	}
	again := *p
	again.Questions = slices.Clone(p.Questions)
	for i := range again.Questions {
		again.Questions[i].Notice = ""
	}
	r.cp.Pause = &again
}

// noticeEnd sends the notice of how the execution ended, if it ended the
// run, and waits until every notice of the execution has started: a
// notice whose workflow had not started would be lost with the run.
func (r *runImpl) noticeEnd(ctx workflow.Context, res *runapi.GraphRunResult, err error) {
	if err != nil && temporal.IsCanceledError(err) {
		// A cancelled run's context is done: it can start nothing more.
		return
	}
	key := func(event string) string { return fmt.Sprintf("%s/%d", event, r.cp.Seq) }
	node := ""
	if len(r.cp.Cursor) > 0 {
		node = r.cp.Cursor[0].Node
	}
	switch stop, stopped := StopError(err); {
	case err == nil && res != nil:
		r.notice(ctx, graph.NotifyCompleted, key(graph.NotifyCompleted), notify.Notice{Node: res.EndNode, Status: runstore.StatusCompleted})
	case err == nil, workflow.IsContinueAsNewError(err):
	case stopped && stop.Type() == runapi.ErrTypeBudget:
		r.notice(ctx, graph.NotifyBudget, key(graph.NotifyBudget), notify.Notice{Node: node, Status: runstore.StatusFailedResumable, Error: err.Error()})
	case stopped:
		r.notice(ctx, graph.NotifyFailed, key(graph.NotifyFailed), notify.Notice{Node: node, Status: runstore.StatusFailedResumable, Error: err.Error()})
	default:
		r.notice(ctx, graph.NotifyFailed, key(graph.NotifyFailed), notify.Notice{Node: node, Status: runstore.StatusFailed, Error: err.Error()})
	}
	for _, f := range r.notices.started {
		if serr := f.GetChildWorkflowExecution().Get(ctx, nil); serr != nil {
			// Already started (the same notice from an earlier execution),
			// or the server refused it: either way nothing to wait for.
			workflow.GetLogger(ctx).Info("a notice's workflow did not start", "error", serr.Error())
		}
	}
}

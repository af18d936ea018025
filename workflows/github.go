package workflows

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// GitHub: runs that start where teams track work and end where they
// review it (docs/github.md). A webhook delivery becomes a GitHubDelivery
// workflow (its id derived from X-GitHub-Delivery, so a redelivery does
// nothing twice), which starts the run or acts on one; a run with a thread
// (runstore.GitHubThread) reports on it as it goes, publishes a pull
// request (review.go) and waits for its reviews.
//
// None of this changes a run that has no thread and no review node: every
// command below is behind `r.cp.GitHub != nil` or a review node, which no
// run recorded before them has, so their histories replay unchanged
// without a GetVersion (the github-*.json histories replay the new path).

// GitHub delivery activities: each step finds what an earlier attempt
// did (comments by their marker, the pull request by its head branch,
// the run by its id), so retries are safe.
const (
	githubAttempt     = 10 * time.Minute
	githubHeartbeat   = 30 * time.Second
	githubPatience    = 6 * time.Hour
	githubMaxInterval = 5 * time.Minute
)

func githubOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:                summary,
		TaskQueue:              runapi.TaskQueue,
		StartToCloseTimeout:    githubAttempt,
		HeartbeatTimeout:       githubHeartbeat,
		ScheduleToCloseTimeout: githubPatience,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        githubMaxInterval,
			NonRetryableErrorTypes: []string{activities.ErrTypeGitHub, activities.ErrTypeBadRequest},
		},
	})
}

// GitHubDelivery carries out the plan the console made of one delivery.
func GitHubDelivery(ctx workflow.Context, p *github.Plan) error {
	if p == nil || p.Kind == "" {
		return temporal.NewNonRetryableApplicationError("GitHubDelivery needs a plan", runapi.ErrTypeGraph, nil)
	}
	reply := func(text string) error {
		if text == "" {
			return nil
		}
		return workflow.ExecuteActivity(githubOptions(ctx, "reply on "+github.ThreadKey(p.Repo, p.Thread)), acts.GitHubReply, &activities.GitHubReplyRequest{Plan: p, Text: text}).Get(ctx, nil)
	}
	switch p.Kind {
	case github.PlanRefuse:
		return reply(p.Reply)
	case github.PlanStart:
		err := startFromGitHub(ctx, p)
		if err == nil {
			return nil
		}
		workflow.GetLogger(ctx).Error("github: the run could not start", "run", p.Start.RunID, "error", activities.ErrorText(err))
		if rerr := reply(fmt.Sprintf("@%s: run %s could not start: %s", p.Author, p.Start.RunID, activities.ErrorText(err))); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	var text string
	if err := workflow.ExecuteActivity(githubOptions(ctx, p.Kind+" from "+github.ThreadKey(p.Repo, p.Thread)), acts.GitHubAct, p).Get(ctx, &text); err != nil {
		return err
	}
	return reply(text)
}

// startFromGitHub imports the repository, posts the status comment and
// starts the run as a child that outlives this workflow; the run's id
// derives from the delivery, so it starts once.
func startFromGitHub(ctx workflow.Context, p *github.Plan) error {
	s := p.Start
	var prep activities.GitHubPrepared
	req := &activities.GitHubPrepareRequest{Plan: p, Started: workflow.GetInfo(ctx).WorkflowStartTime}
	if err := workflow.ExecuteActivity(githubOptions(ctx, fmt.Sprintf("import %s for run %s", p.Repo, s.RunID)), acts.GitHubPrepare, req).Get(ctx, &prep); err != nil {
		return err
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            runapi.RunWorkflowID(s.RunID),
		TaskQueue:             runapi.TaskQueue,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:         fmt.Sprintf("%s for %s", s.GraphName, github.ThreadKey(p.Repo, p.Thread)),
	})
	in := &runapi.GraphRunInput{RunID: s.RunID, Graph: s.Graph, Inputs: s.Inputs, Workspace: prep.Workspace, GitHub: prep.Thread}
	err := workflow.ExecuteChildWorkflow(cctx, runapi.WorkflowType, in).GetChildWorkflowExecution().Get(ctx, nil)
	var started *temporal.ChildWorkflowExecutionAlreadyStartedError
	if errors.As(err, &started) {
		return nil
	}
	return err
}

// gitHubReporter keeps a run's status comment and commit status current:
// one GitHubReport activity at a time, the latest state each time, never
// on the run's critical path.
type gitHubReporter struct {
	dirty, running bool
	// thread is the value of the TetherThread search attribute set.
	thread []string
}

// reportGitHub says on the run's thread where it is now (no-op for a run
// without one).
func (r *runImpl) reportGitHub(ctx workflow.Context) {
	if r.cp.GitHub == nil {
		return
	}
	r.threadVisibility(ctx)
	r.gh.dirty = true
	if r.gh.running {
		return
	}
	r.gh.running = true
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { r.gh.running = false }()
		for r.gh.dirty {
			r.gh.dirty = false
			req := &activities.GitHubReportRequest{Thread: r.threadCopy(), Report: r.githubReport()}
			actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
				Summary:             "report on " + github.ThreadKey(r.cp.GitHub.Repo, r.cp.GitHub.Issue),
				TaskQueue:           runapi.TaskQueue,
				StartToCloseTimeout: time.Minute,
				RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5, NonRetryableErrorTypes: []string{activities.ErrTypeGitHub, activities.ErrTypeBadRequest}},
			})
			if err := workflow.ExecuteActivity(actx, acts.GitHubReport, req).Get(ctx, nil); err != nil {
				workflow.GetLogger(ctx).Warn("github: could not report the run's status", "error", activities.ErrorText(err))
			}
		}
	})
}

// endGitHub reports how the execution ended and waits for the report: the
// run's thread must not be left saying it runs.
func (r *runImpl) endGitHub(ctx workflow.Context, err error) {
	if r.cp.GitHub == nil {
		return
	}
	if err != nil && (temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled)) {
		ctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	if err == nil || !workflow.IsContinueAsNewError(err) {
		r.reportGitHub(ctx)
	}
	_ = workflow.Await(ctx, func() bool { return !r.gh.running })
}

// threadVisibility sets TetherThread to the run's issue and pull request.
func (r *runImpl) threadVisibility(ctx workflow.Context) {
	t := r.cp.GitHub
	if !r.vis.on || t == nil {
		return
	}
	keys := []string{github.ThreadKey(t.Repo, t.Issue)}
	if t.PullRequest > 0 {
		keys = append(keys, github.ThreadKey(t.Repo, t.PullRequest))
	}
	if len(keys) == len(r.gh.thread) {
		return
	}
	r.gh.thread = keys
	if err := workflow.UpsertTypedSearchAttributes(ctx, runapi.SearchThread.ValueSet(keys)); err != nil {
		workflow.GetLogger(ctx).Warn("could not set search attribute", "name", runapi.SearchThread.GetName(), "error", err.Error())
	}
}

func (r *runImpl) threadCopy() *runstore.GitHubThread {
	t := *r.cp.GitHub
	return &t
}

// githubReport is the run as its thread shows it.
func (r *runImpl) githubReport() github.Report {
	rep := github.Report{Run: r.cp.RunID, Graph: r.g.Name, Status: r.cp.Status, Visits: r.cp.PathTotal, Error: oneLine(r.cp.Error, 300)}
	if len(r.current) > 0 {
		rep.Node = r.current[0]
	} else if len(r.cp.Cursor) > 0 {
		rep.Node = r.cp.Cursor[0].Node
	}
	from := max(0, len(r.cp.Path)-12)
	for _, s := range r.cp.Path[from:] {
		rep.Path = append(rep.Path, github.ReportStep{Node: s.Node, Visit: s.Visit, Outcome: s.Outcome})
	}
	u := runUsage(r.cp)
	rep.Tokens = u.Tokens()
	if u.CostKnown {
		rep.CostUSD = u.CostUSD
	}
	for _, q := range r.questions {
		if !q.Answered {
			rep.Questions = append(rep.Questions, github.ReportQuestion{ID: q.ID, Node: q.Node, Text: oneLine(q.Text, 1000)})
		}
	}
	if t := r.cp.GitHub; t != nil {
		rep.PullRequest, rep.PullRequestURL = t.PullRequest, t.PullRequestURL
	}
	return rep
}

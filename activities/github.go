package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/github/forge"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/notify"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// ErrTypeGitHub is a GitHub request that asking again would not change
// (a permission the App lacks, a repository or pull request gone, no
// credentials on the worker), or a pull request from a fork.
const ErrTypeGitHub = "GitHubRefused"

// GitHub is what the GitHub activities need beside the worker's stores:
// the credentials (nil: this worker has none), the Temporal client that
// answers, guides and cancels runs as `tether` does, and the console's
// address for links.
type GitHub struct {
	Forge      *forge.Forge
	Temporal   client.Client
	ConsoleURL string
}

// githubError types err for the workflow's retry policy.
func githubError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, forge.ErrRefused) || errors.Is(err, forge.ErrNoCredentials) || errors.Is(err, forge.ErrDiverged) ||
		errors.Is(err, workspace.ErrSource) || errors.Is(err, workspace.ErrTooLarge) || errors.Is(err, workspace.ErrUnsafePath) {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeGitHub, err)
	}
	return err
}

func (a *Activities) forge() (*forge.Forge, error) {
	if a.GitHub == nil || a.GitHub.Forge == nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("worker %s has no GitHub credentials; set %s and %s (a GitHub App) or %s on every worker", a.Queue, forge.AppIDEnv, forge.AppKeyEnv, forge.TokenEnv), ErrTypeGitHub, nil)
	}
	return a.GitHub.Forge, nil
}

func (a *Activities) consoleURL() string {
	if a.GitHub == nil {
		return ""
	}
	return a.GitHub.ConsoleURL
}

// GitHubPrepareRequest prepares the run a delivery starts.
type GitHubPrepareRequest struct {
	Plan *github.Plan `json:"plan"`
	// Started is when the delivery's workflow began: the time of the
	// workspace's first commit, the same on every attempt.
	Started time.Time `json:"started"`
}

// GitHubPrepared is a run ready to start: its workspace and its thread.
type GitHubPrepared struct {
	Workspace *runstore.WorkspaceState `json:"workspace"`
	Thread    *runstore.GitHubThread   `json:"thread"`
}

// GitHubPrepare imports the repository of a start plan at its branch (a
// pull request's head, for a comment on one) into the run's workspace,
// cloned with the worker's credentials, and posts the run's status comment
// on the thread (found again by its marker on a retry).
func (a *Activities) GitHubPrepare(ctx context.Context, req *GitHubPrepareRequest) (*GitHubPrepared, error) {
	p := req.Plan
	if p == nil || p.Start == nil || !runstore.ValidRepo(p.Repo) || runstore.ValidateRunID(p.Start.RunID) != nil {
		return nil, temporal.NewNonRetryableApplicationError("GitHubPrepare needs a start plan with a repository and a run id", ErrTypeBadRequest, nil)
	}
	f, err := a.forge()
	if err != nil {
		return nil, err
	}
	stop := a.heartbeat(ctx)
	defer stop()
	ref := p.Start.Ref
	if ref == "" && p.ThreadIsPR {
		pr, err := f.Pull(ctx, p.Installation, p.Repo, p.Thread)
		if err != nil {
			return nil, githubError(err)
		}
		if !strings.EqualFold(pr.HeadRepo, p.Repo) {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("pull request %s#%d comes from %s, a fork; Tether runs only on branches of %s itself", p.Repo, p.Thread, pr.HeadRepo, p.Repo), ErrTypeGitHub, nil)
		}
		ref = pr.Head
	}
	if err := workspace.ValidBranchName(ref); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: the branch to start from: %v", p.Repo, err), ErrTypeGitHub, nil)
	}
	lim := workspace.Limits{}
	if a.Workspaces != nil {
		lim = a.Workspaces.Limits()
	}
	st, commit, err := f.Import(ctx, p.Installation, a.Blobs, p.Start.RunID, p.Repo, ref, lim, req.Started)
	if err != nil {
		return nil, githubError(fmt.Errorf("run %s: import %s at %s: %w", p.Start.RunID, p.Repo, ref, err))
	}
	thread := &runstore.GitHubThread{Repo: p.Repo, Installation: p.Installation, Issue: p.Thread, IssueURL: p.Start.IssueURL,
		OnPullRequest: p.ThreadIsPR, Base: ref, BaseCommit: commit}
	rep := github.Report{Run: p.Start.RunID, Graph: p.Start.Graph.Name, Status: runstore.StatusRunning}
	id, err := f.UpsertComment(ctx, p.Installation, p.Repo, p.Thread, "run:"+p.Start.RunID, forge.StatusComment(rep, a.consoleURL()), 0)
	if err != nil {
		return nil, githubError(err)
	}
	thread.StatusComment = id
	a.logger().Info("github: run prepared", "run", p.Start.RunID, "repo", p.Repo, "ref", ref, "commit", commit, "files", st.Files)
	return &GitHubPrepared{Workspace: st, Thread: thread}, nil
}

// GitHubReplyRequest is a reply to a delivery's comment or review.
type GitHubReplyRequest struct {
	Plan *github.Plan `json:"plan"`
	Text string       `json:"text"`
}

// GitHubReply posts one reply on the plan's thread, found again by the
// delivery's marker on a retry.
func (a *Activities) GitHubReply(ctx context.Context, req *GitHubReplyRequest) error {
	f, err := a.forge()
	if err != nil {
		return err
	}
	p := req.Plan
	_, err = f.UpsertComment(ctx, p.Installation, p.Repo, p.Thread, "reply:"+p.Delivery, req.Text, 0)
	return githubError(err)
}

// GitHubAct carries out an answer, guide, cancel, review or close plan on
// the run it is for, through the same update, signal and cancel as the
// tether commands, and returns what to reply ("" for nothing).
func (a *Activities) GitHubAct(ctx context.Context, p *github.Plan) (string, error) {
	if a.GitHub == nil || a.GitHub.Temporal == nil {
		return "", temporal.NewNonRetryableApplicationError("this worker has no Temporal client for GitHub's commands", ErrTypeBadRequest, nil)
	}
	c := a.GitHub.Temporal
	run, reply, err := a.threadRun(ctx, c, p)
	if err != nil || run == "" {
		return reply, err
	}
	if open, err := runOpen(ctx, c, run); err != nil {
		return "", err
	} else if !open {
		if p.Kind == github.PlanReview || p.Kind == github.PlanClosed {
			// A review or a merge after the run ended (or of a branch
			// that only looks like a run's) has nothing to act on.
			a.logger().Info("github: the run is not open; nothing to do", "run", run, "plan", p.Kind, "delivery", p.Delivery)
			return "", nil
		}
		return fmt.Sprintf("@%s: run %s is not open, so nothing was done.", p.Author, run), nil
	}
	by := "github:" + p.Author
	sub, err := client.NewClientFromExisting(c, client.Options{Identity: by})
	if err != nil {
		return "", err
	}
	defer sub.Close()
	switch p.Kind {
	case github.PlanAnswer:
		return a.answerRun(ctx, sub, run, p, runapi.Answer{QuestionID: p.Target, Text: p.Text}, fmt.Sprintf("answered %s of run %s", p.Target, run))
	case github.PlanGuide:
		gd := runapi.Guide{Node: p.Target, Text: p.Text, By: by}
		g, err := a.runGraph(ctx, c, run)
		if err != nil {
			return "", err
		}
		if err := runapi.CheckGuide(g, gd); err != nil {
			return fmt.Sprintf("@%s: run %s: %v", p.Author, run, err), nil
		}
		if err := sub.SignalWorkflow(ctx, run, "", runapi.SignalGuide, gd); err != nil {
			return "", fmt.Errorf("signal run %s: %w", run, err)
		}
		return fmt.Sprintf("@%s: note sent to node %s of run %s; its next visit gets it after its prompt.", p.Author, p.Target, run), nil
	case github.PlanCancel:
		if err := sub.CancelWorkflow(ctx, run, ""); err != nil {
			return "", fmt.Errorf("cancel run %s: %w", run, err)
		}
		return fmt.Sprintf("@%s: run %s is canceled; `tether resume %s` continues it.", p.Author, run, run), nil
	case github.PlanReview:
		text, err := a.reviewAnswer(ctx, p)
		if err != nil || text == "" {
			return "", err
		}
		node, err := a.reviewNode(ctx, c, run)
		if err != nil || node == "" {
			return "", err
		}
		reply, err := a.answerRun(ctx, sub, run, p, runapi.Answer{QuestionID: node, Text: text}, "")
		if err != nil {
			return "", err
		}
		return reply, nil
	case github.PlanClosed:
		if p.Merged {
			node, err := a.reviewNode(ctx, c, run)
			if err != nil || node == "" {
				return "", err
			}
			return a.answerRun(ctx, sub, run, p, runapi.Answer{QuestionID: node, Text: graph.VerdictMerged}, "")
		}
		if err := sub.CancelWorkflow(ctx, run, ""); err != nil {
			return "", fmt.Errorf("cancel run %s: %w", run, err)
		}
		a.logger().Info("github: pull request closed, run canceled", "run", run, "repo", p.Repo, "pull_request", p.PullRequest)
		return "", nil
	}
	return "", temporal.NewNonRetryableApplicationError("GitHubAct: plan "+p.Kind, ErrTypeBadRequest, nil)
}

// runOpen reports whether run is an open execution Temporal knows.
func runOpen(ctx context.Context, c client.Client, run string) (bool, error) {
	d, err := c.DescribeWorkflow(ctx, run, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("describe run %s: %w", run, err)
	}
	return d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// answerRun sends the answer update; a refusal is a reply, not a failure.
// The update's id is the delivery's, so a retried activity is one answer.
func (a *Activities) answerRun(ctx context.Context, c client.Client, run string, p *github.Plan, ans runapi.Answer, ok string) (string, error) {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		UpdateID: "github/" + p.Delivery, WorkflowID: run, UpdateName: runapi.UpdateAnswer, Args: []any{ans},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return fmt.Sprintf("@%s: run %s is not open, so nothing was answered.", p.Author, run), nil
	case err != nil && ctx.Err() == nil && isRefusal(err):
		return fmt.Sprintf("@%s: run %s refused the answer: %s", p.Author, run, runapi.ErrorText(err)), nil
	case err != nil:
		return "", err
	}
	if ok == "" {
		return "", nil
	}
	return fmt.Sprintf("@%s: %s.", p.Author, ok), nil
}

// isRefusal is an update the run's validator or handler refused.
func isRefusal(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app)
}

// threadRun is the run a plan acts on: the one it names, else the one run
// open on its thread. With none, or several, it says so in a reply.
func (a *Activities) threadRun(ctx context.Context, c client.Client, p *github.Plan) (run, reply string, err error) {
	if p.Run != "" {
		return p.Run, "", nil
	}
	q := fmt.Sprintf("WorkflowType = %q AND ExecutionStatus = \"Running\" AND %s = %q", runapi.WorkflowType, runapi.SearchThread.GetName(), github.ThreadKey(p.Repo, p.Thread))
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: 20})
	if err != nil {
		return "", "", fmt.Errorf("find the runs of %s#%d: %w", p.Repo, p.Thread, err)
	}
	var runs []string
	for _, e := range resp.GetExecutions() {
		if e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			runs = append(runs, e.GetExecution().GetWorkflowId())
		}
	}
	switch len(runs) {
	case 0:
		return "", fmt.Sprintf("@%s: no run of Tether is open on this thread, so nothing was done.", p.Author), nil
	case 1:
		return runs[0], "", nil
	}
	return "", fmt.Sprintf("@%s: %d runs are open on this thread (%s); say which after the verb: `/tether %s run=RUN …`.", p.Author, len(runs), strings.Join(runs, ", "), p.Kind), nil
}

// runGraph is the graph a run executes, as its latest execution's input
// says.
func (a *Activities) runGraph(ctx context.Context, c client.Client, run string) (*graph.Graph, error) {
	it := c.GetWorkflowHistory(ctx, run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return nil, fmt.Errorf("run %s has no history", run)
	}
	ev, err := it.Next()
	if err != nil {
		return nil, fmt.Errorf("read run %s's history: %w", run, err)
	}
	started := ev.GetWorkflowExecutionStartedEventAttributes()
	if started == nil || len(started.GetInput().GetPayloads()) == 0 {
		return nil, fmt.Errorf("run %s's history does not start with its input", run)
	}
	var in runapi.GraphRunInput
	if err := converter.GetDefaultDataConverter().FromPayload(started.GetInput().GetPayloads()[0], &in); err != nil {
		return nil, fmt.Errorf("decode run %s's input: %w", run, err)
	}
	switch {
	case in.Checkpoint != nil:
		return runapi.GraphOf(in.Checkpoint)
	case in.Graph != nil:
		return in.Graph, nil
	}
	return nil, fmt.Errorf("run %s's input holds no graph", run)
}

// reviewNode is the review node of run a review answers: the one waiting,
// else the last one visited, else the graph's first.
func (a *Activities) reviewNode(ctx context.Context, c client.Client, run string) (string, error) {
	v, err := c.QueryWorkflow(ctx, run, "", runapi.QueryState)
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return "", nil
		}
		return "", fmt.Errorf("ask run %s for its state: %w", run, err)
	}
	var st runapi.State
	if err := v.Get(&st); err != nil {
		return "", err
	}
	g, err := a.runGraph(ctx, c, run)
	if err != nil {
		return "", err
	}
	isReview := func(id string) bool {
		n, ok := g.Node(id)
		return ok && n.Kind == graph.KindReview
	}
	for _, q := range st.Questions {
		if isReview(q.Node) {
			return q.Node, nil
		}
	}
	for i := len(st.Path) - 1; i >= 0; i-- {
		if isReview(st.Path[i].Node) {
			return st.Path[i].Node, nil
		}
	}
	for _, n := range g.Nodes {
		if n.Kind == graph.KindReview {
			return n.ID, nil
		}
	}
	return "", nil
}

// reviewAnswer is a review as a review node's answer: its verdict, its
// body and its comments ("path:line: text"). A comment-only review that
// says nothing is no answer ("").
func (a *Activities) reviewAnswer(ctx context.Context, p *github.Plan) (string, error) {
	f, err := a.forge()
	if err != nil {
		return "", err
	}
	parts := []string{strings.TrimSpace(p.Text)}
	if p.Review != 0 {
		comments, err := f.ReviewComments(ctx, p.Installation, p.Repo, p.PullRequest, p.Review)
		if err != nil {
			return "", githubError(err)
		}
		parts = append(parts, comments...)
	}
	feedback := strings.TrimSpace(strings.Join(parts, "\n\n"))
	if len(feedback) > maxReviewText {
		feedback = strings.ToValidUTF8(feedback[:maxReviewText], "") + "\n… (the review goes on; read it on the pull request)"
	}
	if feedback == "" && p.Target == graph.VerdictCommented {
		return "", nil
	}
	if feedback == "" {
		return p.Target, nil
	}
	return p.Target + ": " + feedback, nil
}

// maxReviewText bounds the review a run is answered with (a review's
// body and its comments can be long; the answer travels in the run's
// history and the writer's prompt).
const maxReviewText = 64 << 10

// GitHubPublishRequest publishes a run's work to its pull request.
type GitHubPublishRequest struct {
	Thread    *runstore.GitHubThread   `json:"thread"`
	Workspace *runstore.WorkspaceState `json:"workspace"`
	Title     string                   `json:"title"`
	Body      string                   `json:"body"`
	Draft     bool                     `json:"draft,omitempty"`
	Report    github.Report            `json:"report"`
	// Waiting says the run is about to wait for a review: the head's
	// status is pending, not the run's end.
	Waiting bool `json:"waiting,omitempty"`
}

// GitHubPublished is the run's pull request after a publish.
type GitHubPublished struct {
	PullRequest int    `json:"pull_request"`
	URL         string `json:"url"`
	Head        string `json:"head"`
	State       string `json:"state"`
	Merged      bool   `json:"merged,omitempty"`
	Commits     int    `json:"commits"`
}

// GitHubPublish pushes the run's commits to tether/RUN, opens or updates
// its pull request (found by that head branch), sets the head's commit
// status and edits the run's status comment. Every step finds what an
// earlier attempt did, so a retry, or another worker, does it once.
func (a *Activities) GitHubPublish(ctx context.Context, req *GitHubPublishRequest) (*GitHubPublished, error) {
	t := req.Thread
	if err := t.Validate(); err != nil || t == nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("GitHubPublish needs a valid thread: %v", err), ErrTypeBadRequest, nil)
	}
	f, err := a.forge()
	if err != nil {
		return nil, err
	}
	stop := a.heartbeat(ctx)
	defer stop()
	run := req.Report.Run
	lim := workspace.Limits{}
	if a.Workspaces != nil {
		lim = a.Workspaces.Limits()
	}
	branch := github.Branch(run)
	if req.Workspace == nil || req.Workspace.Commit == "" || req.Workspace.Commit == req.Workspace.Base {
		// Nothing changed: GitHub opens no pull request without commits.
		rep := req.Report
		a.logger().Info("github: nothing to publish yet", "run", run, "repo", t.Repo)
		return &GitHubPublished{}, githubError(a.report(ctx, f, t, t.Head, rep, req.Waiting))
	}
	pushed, err := f.PushRun(ctx, t.Installation, a.Blobs, lim, run, req.Workspace, t.Repo, branch, t.Base, t.BaseCommit)
	if err != nil {
		return nil, githubError(err)
	}
	body := forge.PullRequestBody(req.Body, t.Issue, !t.OnPullRequest, req.Report, a.consoleURL())
	pr, err := f.UpsertPullRequest(ctx, t.Installation, t.Repo, forge.PullRequestSpec{Head: branch, Base: t.Base, Title: req.Title, Body: body, Draft: req.Draft})
	if err != nil {
		return nil, githubError(err)
	}
	out := &GitHubPublished{PullRequest: pr.Number, URL: pr.URL, Head: pushed.Head, State: pr.State, Merged: pr.Merged, Commits: pushed.Commits}
	rep := req.Report
	rep.PullRequest, rep.PullRequestURL = pr.Number, pr.URL
	if err := a.report(ctx, f, t, pushed.Head, rep, req.Waiting); err != nil {
		return nil, githubError(err)
	}
	a.logger().Info("github: published", "run", run, "repo", t.Repo, "pull_request", pr.Number, "head", pushed.Head, "commits", pushed.Commits)
	return out, nil
}

// GitHubReportRequest is a run's status, for its issue and pull request.
type GitHubReportRequest struct {
	Thread *runstore.GitHubThread `json:"thread"`
	Report github.Report          `json:"report"`
}

// GitHubReport edits the run's status comment and, when it has a pull
// request, sets its head's commit status.
func (a *Activities) GitHubReport(ctx context.Context, req *GitHubReportRequest) error {
	t := req.Thread
	if err := t.Validate(); err != nil || t == nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("GitHubReport needs a valid thread: %v", err), ErrTypeBadRequest, nil)
	}
	f, err := a.forge()
	if err != nil {
		return err
	}
	return githubError(a.report(ctx, f, t, t.Head, req.Report, false))
}

func (a *Activities) report(ctx context.Context, f *forge.Forge, t *runstore.GitHubThread, head string, rep github.Report, waiting bool) error {
	if _, err := f.UpsertComment(ctx, t.Installation, t.Repo, t.Issue, "run:"+rep.Run, forge.StatusComment(rep, a.consoleURL()), t.StatusComment); err != nil {
		return err
	}
	if head == "" {
		return nil
	}
	state, desc := forge.StatusPending, "running: "+rep.Node
	switch {
	case waiting || rep.Status == runstore.StatusWaiting:
		desc = "waiting for a review"
	case rep.Status == runstore.StatusCompleted:
		state, desc = forge.StatusSuccess, "the run completed"
	case rep.Status == runstore.StatusCanceled:
		state, desc = forge.StatusError, "the run was canceled"
	case rep.Status == runstore.StatusFailed || rep.Status == runstore.StatusFailedResumable:
		state, desc = forge.StatusFailure, "the run stopped: "+rep.Error
	}
	return f.SetStatus(ctx, t.Installation, t.Repo, head, state, desc, forge.RunLink(a.consoleURL(), rep.Run))
}

// githubNotice posts notice n on its run's issue or pull request (a
// github endpoint of TETHER_NOTIFY), found again by its key on a retry.
func (a *Activities) githubNotice(ctx context.Context, n *notify.Notice) error {
	t := n.Thread
	if t == nil || !runstore.ValidRepo(t.Repo) || t.Number <= 0 {
		return fmt.Errorf("%w: run %s did not start from GitHub, so endpoint %s has no thread to post on", notify.ErrRefused, n.Run, n.Endpoint)
	}
	f, err := a.forge()
	if err != nil {
		return fmt.Errorf("%w: %s", notify.ErrRefused, ErrorText(err))
	}
	links, err := a.Notifier.Links(*n)
	if err != nil {
		return fmt.Errorf("%w: answer links: %v", notify.ErrRefused, err)
	}
	body, err := notify.Body(notify.FormatGitHub, *n, links)
	if err != nil {
		return fmt.Errorf("%w: %v", notify.ErrRefused, err)
	}
	if _, err := f.UpsertComment(ctx, t.Installation, t.Repo, t.Number, "notice:"+n.Key, string(body), 0); err != nil {
		if errors.Is(err, forge.ErrRefused) {
			return fmt.Errorf("%w: %v", notify.ErrRefused, err)
		}
		return fmt.Errorf("%w: %v", notify.ErrTransient, err)
	}
	return nil
}

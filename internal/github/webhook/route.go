package webhook

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/github/triggers"
	"github.com/tether-run/tether/internal/graph"
)

// Route decides what a verified delivery makes Tether do. A nil plan does
// nothing, and why says so (GitHub shows it in the delivery's response).
func Route(d *github.Delivery, t *triggers.Triggers) (plan *github.Plan, why string) {
	if !t.Knows(d.Repo) {
		return nil, fmt.Sprintf("no trigger names %s", d.Repo)
	}
	base := github.Plan{Delivery: d.ID, Repo: d.Repo, Installation: d.Installation, Author: d.Sender}
	switch {
	case d.Event == github.EventIssues && d.Action == "labeled" && d.Issue != nil:
		name, g, tr, ok := t.ForLabel(d.Repo, d.Label)
		if !ok {
			return nil, fmt.Sprintf("no trigger for label %q", d.Label)
		}
		base.Thread = d.Issue.Number
		return startPlan(base, d, name, g, tr, nil)
	case d.Event == github.EventIssueComment && d.Action == "created" && d.Issue != nil && d.Comment != nil:
		return routeComment(base, d, t)
	case d.Event == github.EventReview && d.Action == "submitted" && d.PullRequest != nil && d.Review != nil:
		run := github.RunOfBranch(d.PullRequest.Head)
		if run == "" || !sameRepo(d.PullRequest.HeadRepo, d.Repo) {
			return nil, "the pull request is not a run's"
		}
		base.Thread, base.ThreadIsPR, base.Run, base.PullRequest, base.Author = d.PullRequest.Number, true, run, d.PullRequest.Number, d.Review.Author
		if !github.IsTrusted(d.Review.Association) {
			return refuse(base, d.Review.Author, d.Review.Association, "review"), ""
		}
		verdict := map[string]string{"approved": graph.VerdictApproved, "changes_requested": graph.VerdictChangesRequested, "commented": graph.VerdictCommented}[d.Review.State]
		if verdict == "" {
			return nil, fmt.Sprintf("a review in state %q", d.Review.State)
		}
		base.Kind, base.Target, base.Text, base.Review = github.PlanReview, verdict, d.Review.Body, d.Review.ID
		return &base, ""
	case d.Event == github.EventPullRequest && d.Action == "closed" && d.PullRequest != nil:
		run := github.RunOfBranch(d.PullRequest.Head)
		if run == "" || !sameRepo(d.PullRequest.HeadRepo, d.Repo) {
			return nil, "the pull request is not a run's"
		}
		base.Kind, base.Thread, base.ThreadIsPR, base.Run, base.PullRequest, base.Merged = github.PlanClosed, d.PullRequest.Number, true, run, d.PullRequest.Number, d.PullRequest.Merged
		return &base, ""
	}
	return nil, fmt.Sprintf("Tether does not act on %s.%s", d.Event, d.Action)
}

func sameRepo(head, repo string) bool { return head == "" || strings.EqualFold(head, repo) }

func routeComment(base github.Plan, d *github.Delivery, t *triggers.Triggers) (*github.Plan, string) {
	c := d.Comment
	if c.Bot || strings.Contains(c.Body, "<!-- tether:") {
		return nil, "a comment by a bot"
	}
	cmd, err := github.ParseCommand(c.Body)
	if errors.Is(err, github.ErrNotACommand) {
		return nil, "a comment without a /tether command"
	}
	base.Thread, base.ThreadIsPR, base.Author = d.Issue.Number, d.Issue.IsPullRequest, c.Author
	if !github.IsTrusted(c.Association) {
		return refuse(base, c.Author, c.Association, "command"), ""
	}
	if err != nil {
		base.Kind, base.Reply = github.PlanRefuse, fmt.Sprintf("@%s: %s", c.Author, strings.TrimPrefix(err.Error(), "github: "))
		return &base, ""
	}
	base.Run = cmd.Run
	switch cmd.Verb {
	case github.CmdRun:
		g, tr, err := t.ForCommand(d.Repo, cmd.Graph)
		if err != nil {
			base.Kind, base.Reply = github.PlanRefuse, fmt.Sprintf("@%s: %s; nothing was started.", c.Author, strings.TrimPrefix(err.Error(), "triggers: "))
			return &base, ""
		}
		return startPlan(base, d, cmd.Graph, g, tr, cmd.Inputs)
	case github.CmdAnswer:
		base.Kind = github.PlanAnswer
	case github.CmdGuide:
		base.Kind = github.PlanGuide
	case github.CmdCancel:
		base.Kind = github.PlanCancel
	}
	base.Target, base.Text = cmd.Target, cmd.Text
	return &base, ""
}

func startPlan(base github.Plan, d *github.Delivery, name string, g *graph.Graph, tr *triggers.Trigger, given map[string]string) (*github.Plan, string) {
	inputs, err := triggers.Inputs(g, tr, d.Issue, given)
	if err != nil {
		base.Kind, base.Reply = github.PlanRefuse, fmt.Sprintf("@%s: %s; nothing was started.", base.Author, strings.TrimPrefix(err.Error(), "graph: "))
		return &base, ""
	}
	base.Kind = github.PlanStart
	base.Start = &github.Start{
		RunID: github.RunID(d.Repo, d.Issue.Number, d.ID), GraphName: name, Graph: g, Inputs: inputs,
		IssueURL: d.Issue.URL, Title: d.Issue.Title,
	}
	if !d.Issue.IsPullRequest {
		// A comment on a pull request starts from its head, which the
		// worker reads from GitHub (the comment's payload does not say).
		base.Start.Ref = d.DefaultBranch
	}
	return &base, ""
}

func refuse(base github.Plan, author, association, what string) *github.Plan {
	base.Kind = github.PlanRefuse
	if association == "" {
		association = "NONE"
	}
	base.Reply = fmt.Sprintf("@%s: Tether takes a %s only from the repository's owners, members and collaborators (your association with it is %s), so nothing was done.", author, what, association)
	return &base
}

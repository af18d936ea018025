// Package github is the contract between the console, which takes
// GitHub's webhooks, and the workers, which act on them: what a delivery
// says (Delivery, read from GitHub's payloads with go-github's types),
// what Tether does about it (Plan), the `/tether` commands people write
// in comments, and the names both sides derive from a delivery (the run
// id, the workflow id, the branch, the markers of Tether's comments).
//
// It holds no credential and makes no request: the console verifies and
// routes a delivery (internal/github/webhook), the workers clone, push and
// call GitHub's API with their own credentials (internal/github/forge).
package github

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v88/github"
)

// Event names (X-GitHub-Event) Tether reads.
const (
	EventIssues        = "issues"
	EventIssueComment  = "issue_comment"
	EventPullRequest   = "pull_request"
	EventReview        = "pull_request_review"
	EventReviewComment = "pull_request_review_comment"
	EventPing          = "ping"
)

// Delivery is one webhook delivery, as much of it as Tether reads. Text in
// it (titles, bodies, comments, reviews) was written by people on GitHub:
// untrusted wherever it goes.
type Delivery struct {
	// ID is X-GitHub-Delivery: the idempotency key of everything the
	// delivery starts.
	ID     string `json:"id"`
	Event  string `json:"event"`
	Action string `json:"action,omitempty"`
	// Repo is owner/name; DefaultBranch its default branch.
	Repo          string `json:"repo"`
	DefaultBranch string `json:"default_branch,omitempty"`
	// Installation is the GitHub App installation the delivery came
	// through (0 for a repository's own webhook).
	Installation int64  `json:"installation,omitempty"`
	Sender       string `json:"sender,omitempty"`
	// Label is the label an issues.labeled delivery added.
	Label       string       `json:"label,omitempty"`
	Issue       *Issue       `json:"issue,omitempty"`
	Comment     *Comment     `json:"comment,omitempty"`
	PullRequest *PullRequest `json:"pull_request,omitempty"`
	Review      *Review      `json:"review,omitempty"`
}

// Issue is an issue, or a pull request seen as an issue (its comments).
type Issue struct {
	Number int    `json:"number"`
	Title  string `json:"title,omitempty"`
	Body   string `json:"body,omitempty"`
	Author string `json:"author,omitempty"`
	URL    string `json:"url,omitempty"`
	// IsPullRequest: the issue is a pull request.
	IsPullRequest bool `json:"is_pull_request,omitempty"`
}

// Comment is a comment on an issue or a pull request's conversation.
type Comment struct {
	ID     int64  `json:"id"`
	Body   string `json:"body"`
	Author string `json:"author"`
	// Association is the author's relationship to the repository
	// (OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, …).
	Association string `json:"association"`
	// Bot says the author is a bot (a GitHub App, Tether's own included).
	Bot bool `json:"bot,omitempty"`
}

// PullRequest is a pull request, with its head and base.
type PullRequest struct {
	Number int    `json:"number"`
	Title  string `json:"title,omitempty"`
	Body   string `json:"body,omitempty"`
	Author string `json:"author,omitempty"`
	URL    string `json:"url,omitempty"`
	// Head is the head branch and HeadSHA its commit; HeadRepo the
	// repository the head lives in (a fork's, maybe).
	Head     string `json:"head"`
	HeadSHA  string `json:"head_sha,omitempty"`
	HeadRepo string `json:"head_repo,omitempty"`
	Base     string `json:"base"`
	State    string `json:"state,omitempty"`
	Merged   bool   `json:"merged,omitempty"`
}

// Review is a submitted review of a pull request.
type Review struct {
	ID int64 `json:"id"`
	// State is approved, changes_requested or commented (as GitHub's
	// webhooks write it).
	State       string `json:"state"`
	Body        string `json:"body,omitempty"`
	Author      string `json:"author"`
	Association string `json:"association"`
}

// ErrPayload is a delivery whose payload is not what GitHub documents for
// its event.
var ErrPayload = errors.New("github: malformed delivery")

// Read turns a verified payload of event (X-GitHub-Event) into a Delivery;
// ok is false for an event Tether does not read.
func Read(id, event string, payload []byte) (d *Delivery, ok bool, err error) {
	switch event {
	case EventIssues, EventIssueComment, EventPullRequest, EventReview:
	default:
		return nil, false, nil
	}
	v, err := gh.ParseWebHook(event, payload)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", ErrPayload, event, err)
	}
	d = &Delivery{ID: id, Event: event}
	switch e := v.(type) {
	case *gh.IssuesEvent:
		d.Action = e.GetAction()
		d.repo(e.GetRepo(), e.GetInstallation(), e.GetSender())
		d.Issue = issueOf(e.GetIssue())
		d.Label = e.GetLabel().GetName()
	case *gh.IssueCommentEvent:
		d.Action = e.GetAction()
		d.repo(e.GetRepo(), e.GetInstallation(), e.GetSender())
		d.Issue = issueOf(e.GetIssue())
		c := e.GetComment()
		d.Comment = &Comment{ID: c.GetID(), Body: c.GetBody(), Author: c.GetUser().GetLogin(), Association: c.GetAuthorAssociation(),
			Bot: strings.EqualFold(c.GetUser().GetType(), "Bot")}
	case *gh.PullRequestEvent:
		d.Action = e.GetAction()
		d.repo(e.GetRepo(), e.GetInstallation(), e.GetSender())
		d.PullRequest = pullOf(e.GetPullRequest())
	case *gh.PullRequestReviewEvent:
		d.Action = e.GetAction()
		d.repo(e.GetRepo(), e.GetInstallation(), e.GetSender())
		d.PullRequest = pullOf(e.GetPullRequest())
		r := e.GetReview()
		d.Review = &Review{ID: r.GetID(), State: strings.ToLower(r.GetState()), Body: r.GetBody(), Author: r.GetUser().GetLogin(), Association: r.GetAuthorAssociation()}
	}
	if d.Repo == "" {
		return nil, false, fmt.Errorf("%w: %s has no repository", ErrPayload, event)
	}
	return d, true, nil
}

func (d *Delivery) repo(r *gh.Repository, in *gh.Installation, sender *gh.User) {
	d.Repo = r.GetFullName()
	d.DefaultBranch = r.GetDefaultBranch()
	d.Installation = in.GetID()
	d.Sender = sender.GetLogin()
}

func issueOf(i *gh.Issue) *Issue {
	if i == nil {
		return nil
	}
	return &Issue{Number: i.GetNumber(), Title: i.GetTitle(), Body: i.GetBody(), Author: i.GetUser().GetLogin(),
		URL: i.GetHTMLURL(), IsPullRequest: i.IsPullRequest()}
}

func pullOf(p *gh.PullRequest) *PullRequest {
	if p == nil {
		return nil
	}
	return &PullRequest{Number: p.GetNumber(), Title: p.GetTitle(), Body: p.GetBody(), Author: p.GetUser().GetLogin(),
		URL: p.GetHTMLURL(), Head: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(), HeadRepo: p.GetHead().GetRepo().GetFullName(),
		Base: p.GetBase().GetRef(), State: p.GetState(), Merged: p.GetMerged()}
}

// Trusted are the author associations whose comments and reviews drive
// runs: the repository's owner, its organisation's members and its
// collaborators. Anyone else gets one reply saying why, and nothing runs.
var Trusted = []string{"OWNER", "MEMBER", "COLLABORATOR"}

// IsTrusted reports whether association is one of Trusted.
func IsTrusted(association string) bool {
	for _, t := range Trusted {
		if strings.EqualFold(association, t) {
			return true
		}
	}
	return false
}

// BranchPrefix starts the branch a run pushes its commits to: tether/RUN.
const BranchPrefix = "tether/"

// Branch is run's branch.
func Branch(run string) string { return BranchPrefix + run }

// RunOfBranch is the run whose branch is ref ("" when ref is no run's).
func RunOfBranch(ref string) string {
	run, ok := strings.CutPrefix(ref, BranchPrefix)
	if !ok || run == "" || strings.Contains(run, "/") {
		return ""
	}
	return run
}

// RunID is the id of the run a delivery starts: the repository's name,
// the issue and the start of a digest of the delivery id, so the same
// delivery always names the same run (and Temporal refuses a second).
func RunID(repo string, issue int, delivery string) string {
	name := repo
	if i := strings.LastIndexByte(repo, '/'); i >= 0 {
		name = repo[i+1:]
	}
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	sum := sha256.Sum256([]byte("tether github delivery\x00" + delivery))
	return fmt.Sprintf("gh-%s-%d-%s", strings.Trim(b.String(), "-"), issue, hex.EncodeToString(sum[:4]))
}

// WorkflowType is the registered name of the workflow that carries out a
// delivery's Plan on the workers.
const WorkflowType = "TetherGitHub"

// DeliveryWorkflowID is the id of the workflow that handles a delivery:
// Temporal refuses a second workflow with it, so a redelivery does
// nothing twice.
func DeliveryWorkflowID(delivery string) string { return "github/delivery/" + delivery }

// ThreadKey is the value of the TetherThread search attribute for an issue
// or pull request: how a comment finds the runs of its thread.
func ThreadKey(repo string, number int) string { return fmt.Sprintf("%s#%d", repo, number) }

// Marker is the hidden line that names a comment Tether wrote (key: what
// the comment is for), by which a comment is found again instead of being
// posted twice.
func Marker(key string) string { return "<!-- tether:" + key + " -->" }

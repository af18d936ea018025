package runstore

import (
	"fmt"
	"regexp"
	"strings"
)

// GitHubThread is the GitHub issue (or pull request) a run started from,
// and the pull request the run opened for its work. Everything in it is
// public about the repository; no credential is ever here (the worker
// holds those). Every field reaches an API path, a git ref or a comment,
// so Validate checks them when a checkpoint is read from the store.
type GitHubThread struct {
	// Repo is owner/name.
	Repo string `json:"repo"`
	// Installation is the GitHub App installation the webhook came
	// through (0: the worker's token).
	Installation int64 `json:"installation,omitempty"`
	// Issue is the number of the issue or pull request the run started
	// from, where it posts its status and questions.
	Issue int `json:"issue"`
	// IssueURL is its page.
	IssueURL string `json:"issue_url,omitempty"`
	// OnPullRequest says Issue is a pull request (a `/tether run` comment
	// on one): the run's pull request targets its head, and says no
	// "Fixes #N".
	OnPullRequest bool `json:"on_pull_request,omitempty"`
	// Base is the branch the run's files came from and its pull request
	// targets; BaseCommit the commit of it the run started at.
	Base       string `json:"base"`
	BaseCommit string `json:"base_commit,omitempty"`
	// StatusComment is the comment on Issue that the run edits as it goes.
	StatusComment int64 `json:"status_comment,omitempty"`
	// PullRequest is the run's pull request, once opened, and URL its page.
	PullRequest    int    `json:"pull_request,omitempty"`
	PullRequestURL string `json:"pull_request_url,omitempty"`
	// Head is the commit last pushed to the run's branch.
	Head string `json:"head,omitempty"`
}

// QueuedReview is a review that arrived while its review node was not
// waiting.
type QueuedReview struct {
	Node string `json:"node"`
	// Text is the answer: the verdict, then the feedback.
	Text string `json:"text"`
	// Key names the delivery it came from, so that a delivery handled
	// twice queues it once.
	Key string `json:"key,omitempty"`
}

// The characters of an owner, a repository's name and a branch; their
// lengths are checked apart (a counted repetition such as {1,200} costs
// milliseconds to compile, at every start of tether and its worker).
var (
	ownerRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	branchRE = regexp.MustCompile(`^[A-Za-z0-9._/-]+$`)
)

// ValidRepo reports whether s is owner/name as GitHub spells them: an
// owner of 1 to 39 characters, a name of 1 to 100.
func ValidRepo(s string) bool {
	owner, name, ok := strings.Cut(s, "/")
	return ok && len(owner) <= 39 && len(name) <= 100 && ownerRE.MatchString(owner) && nameRE.MatchString(name) &&
		s[len(s)-1] != '.' && !regexpDots(s)
}

func regexpDots(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == '.' {
			return true
		}
	}
	return false
}

// Validate checks what reaches API paths, refs and git (nil is valid).
func (t *GitHubThread) Validate() error {
	if t == nil {
		return nil
	}
	bad := func(what string, v any) error {
		return fmt.Errorf("%w: github %s %q is not what tether writes; the checkpoint was not written by tether", ErrInvalidCheckpoint, what, v)
	}
	switch {
	case !ValidRepo(t.Repo):
		return bad("repo", t.Repo)
	case t.Issue <= 0:
		return bad("issue", t.Issue)
	case t.PullRequest < 0:
		return bad("pull request", t.PullRequest)
	case t.Installation < 0:
		return bad("installation", t.Installation)
	case len(t.Base) > 200 || !branchRE.MatchString(t.Base) || t.Base[0] == '-' || regexpDots(t.Base):
		return bad("base branch", t.Base)
	case t.BaseCommit != "" && !ValidObjectID(t.BaseCommit):
		return bad("base commit", t.BaseCommit)
	case t.Head != "" && !ValidObjectID(t.Head):
		return bad("head commit", t.Head)
	}
	return nil
}

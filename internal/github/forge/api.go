package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v88/github"

	"github.com/tether-run/tether/internal/github"
)

// ErrRefused is a request GitHub answered with a refusal that asking again
// would not change (a 4xx other than 408 and 429): the App lacks a
// permission, the repository or pull request is gone.
var ErrRefused = errors.New("forge: GitHub refused the request")

// typed makes an API error say whether it may pass.
func typed(what string, err error) error {
	if err == nil {
		return nil
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		c := er.Response.StatusCode
		if c >= 400 && c < 500 && c != http.StatusRequestTimeout && c != http.StatusTooManyRequests {
			return fmt.Errorf("%w: %s: %d %s", ErrRefused, what, c, er.Message)
		}
		return fmt.Errorf("forge: %s: %d %s", what, c, er.Message)
	}
	return fmt.Errorf("forge: %s: %w", what, err)
}

// UpsertComment posts body on issue (or pull request) number of repo, as
// the comment marked key: found again by its Marker (so a retry never
// posts twice) and edited when it says something else. id, when not 0, is
// the comment to edit. It returns the comment's id.
func (f *Forge) UpsertComment(ctx context.Context, installation int64, repo string, number int, key, body string, id int64) (int64, error) {
	c, err := f.Client(installation)
	if err != nil {
		return 0, err
	}
	owner, name := split(repo)
	body = strings.TrimSpace(body) + "\n\n" + github.Marker(key)
	if id != 0 {
		cm, resp, err := c.Issues.EditComment(ctx, owner, name, id, &gh.IssueComment{Body: &body})
		if err == nil {
			return cm.GetID(), nil
		}
		if resp == nil || resp.StatusCode != http.StatusNotFound {
			return 0, typed(fmt.Sprintf("edit comment %d on %s#%d", id, repo, number), err)
		}
		// Someone deleted it: find it again, or post it again.
	}
	found, same, err := f.findComment(ctx, c, owner, name, number, key, body)
	switch {
	case err != nil:
		return 0, err
	case same:
		return found, nil
	case found != 0:
		cm, _, err := c.Issues.EditComment(ctx, owner, name, found, &gh.IssueComment{Body: &body})
		if err != nil {
			return 0, typed(fmt.Sprintf("edit comment %d on %s#%d", found, repo, number), err)
		}
		return cm.GetID(), nil
	}
	cm, _, err := c.Issues.CreateComment(ctx, owner, name, number, &gh.IssueComment{Body: &body})
	if err != nil {
		return 0, typed(fmt.Sprintf("comment on %s#%d", repo, number), err)
	}
	return cm.GetID(), nil
}

// findComment looks for the comment marked key on the thread: its id, and
// whether it already says body.
func (f *Forge) findComment(ctx context.Context, c *gh.Client, owner, name string, number int, key, body string) (int64, bool, error) {
	marker := github.Marker(key)
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 0; page < 50; page++ {
		list, resp, err := c.Issues.ListComments(ctx, owner, name, number, opts)
		if err != nil {
			return 0, false, typed(fmt.Sprintf("list the comments of %s/%s#%d", owner, name, number), err)
		}
		for _, cm := range list {
			if strings.Contains(cm.GetBody(), marker) {
				return cm.GetID(), cm.GetBody() == body, nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return 0, false, nil
}

// PullRequest is what Tether knows of a pull request.
type PullRequest struct {
	Number   int    `json:"number"`
	URL      string `json:"url"`
	State    string `json:"state"`
	Merged   bool   `json:"merged,omitempty"`
	Head     string `json:"head"`
	HeadSHA  string `json:"head_sha,omitempty"`
	HeadRepo string `json:"head_repo,omitempty"`
	Base     string `json:"base"`
}

func pullOf(p *gh.PullRequest) *PullRequest {
	return &PullRequest{Number: p.GetNumber(), URL: p.GetHTMLURL(), State: p.GetState(), Merged: p.GetMerged() || p.MergedAt != nil,
		Head: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(), HeadRepo: p.GetHead().GetRepo().GetFullName(), Base: p.GetBase().GetRef()}
}

// Pull reads pull request number of repo.
func (f *Forge) Pull(ctx context.Context, installation int64, repo string, number int) (*PullRequest, error) {
	c, err := f.Client(installation)
	if err != nil {
		return nil, err
	}
	owner, name := split(repo)
	p, _, err := c.PullRequests.Get(ctx, owner, name, number)
	if err != nil {
		return nil, typed(fmt.Sprintf("read pull request %s#%d", repo, number), err)
	}
	return pullOf(p), nil
}

// PullRequestSpec is the pull request a run opens or updates.
type PullRequestSpec struct {
	Head, Base  string
	Title, Body string
	Draft       bool
}

// UpsertPullRequest finds the pull request whose head is spec.Head (open
// or not) and updates its title and body, or opens it: retried after a
// lost answer, or by another worker, it finds the one it opened.
func (f *Forge) UpsertPullRequest(ctx context.Context, installation int64, repo string, spec PullRequestSpec) (*PullRequest, error) {
	c, err := f.Client(installation)
	if err != nil {
		return nil, err
	}
	owner, name := split(repo)
	find := func() (*gh.PullRequest, error) {
		list, _, err := c.PullRequests.List(ctx, owner, name, &gh.PullRequestListOptions{Head: owner + ":" + spec.Head, State: "all", ListOptions: gh.ListOptions{PerPage: 10}})
		if err != nil {
			return nil, typed(fmt.Sprintf("find the pull request of %s on %s", spec.Head, repo), err)
		}
		for _, p := range list {
			if p.GetHead().GetRef() == spec.Head {
				return p, nil
			}
		}
		return nil, nil
	}
	p, err := find()
	if err != nil {
		return nil, err
	}
	if p == nil {
		p, _, err = c.PullRequests.Create(ctx, owner, name, &gh.NewPullRequest{Title: &spec.Title, Head: &spec.Head, Base: &spec.Base, Body: &spec.Body, Draft: &spec.Draft})
		if err != nil {
			// Another attempt opened it meanwhile (GitHub answers 422).
			if again, ferr := find(); ferr == nil && again != nil {
				p, err = again, nil
			}
		}
		if err != nil {
			return nil, typed(fmt.Sprintf("open a pull request from %s on %s", spec.Head, repo), err)
		}
		return pullOf(p), nil
	}
	if p.GetState() == "open" && (p.GetTitle() != spec.Title || p.GetBody() != spec.Body) {
		p, _, err = c.PullRequests.Edit(ctx, owner, name, p.GetNumber(), &gh.PullRequest{Title: &spec.Title, Body: &spec.Body})
		if err != nil {
			return nil, typed(fmt.Sprintf("update pull request %s#%d", repo, p.GetNumber()), err)
		}
	}
	return pullOf(p), nil
}

// Status states.
const (
	StatusPending = "pending"
	StatusSuccess = "success"
	StatusFailure = "failure"
	StatusError   = "error"
)

// StatusContext names Tether's commit status.
const StatusContext = "tether"

// SetStatus sets Tether's commit status on sha.
func (f *Forge) SetStatus(ctx context.Context, installation int64, repo, sha, state, description, target string) error {
	c, err := f.Client(installation)
	if err != nil {
		return err
	}
	owner, name := split(repo)
	if len(description) > 140 {
		description = description[:139] + "…"
	}
	st := &gh.RepoStatus{State: &state, Description: &description, Context: gh.Ptr(StatusContext)}
	if target != "" {
		st.TargetURL = &target
	}
	_, _, err = c.Repositories.CreateStatus(ctx, owner, name, sha, *st)
	return typed(fmt.Sprintf("set the status of %s on %s", sha, repo), err)
}

// ReviewComments are the comments of review id on pull request number, as
// "path:line: text" lines.
func (f *Forge) ReviewComments(ctx context.Context, installation int64, repo string, number int, id int64) ([]string, error) {
	c, err := f.Client(installation)
	if err != nil {
		return nil, err
	}
	owner, name := split(repo)
	list, _, err := c.PullRequests.ListReviewComments(ctx, owner, name, number, id, &gh.ListOptions{PerPage: 100})
	if err != nil {
		return nil, typed(fmt.Sprintf("read the comments of review %d on %s#%d", id, repo, number), err)
	}
	var out []string
	for _, cm := range list {
		line := cm.GetLine()
		if line == 0 {
			line = cm.GetOriginalLine()
		}
		out = append(out, fmt.Sprintf("%s:%d: %s", cm.GetPath(), line, strings.TrimSpace(cm.GetBody())))
	}
	return out, nil
}

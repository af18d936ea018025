package graph

import (
	"errors"
	"fmt"
	"strings"
)

// Publish says where a run's work goes: a pull request of the repository
// the run started from (docs/github.md). On the graph it applies before
// every review node waits and at every end; on an end node, only when the
// run ends there (in place of the graph's).
type Publish struct {
	PullRequest *PullRequest `json:"pull_request,omitempty" yaml:"pull_request,omitempty"`
}

// PullRequest is the pull request a run opens, or updates, on its branch
// tether/RUN. Title and Body are templates over .input (the run's inputs:
// the number, title, body, author and url among them); Tether adds
// "Fixes #N", the path the run took, its cost and its console link to the
// body.
type PullRequest struct {
	Title string `json:"title" yaml:"title"`
	Body  string `json:"body,omitempty" yaml:"body,omitempty"`
	Draft bool   `json:"draft,omitempty" yaml:"draft,omitempty"`
}

// Render fills the title and body with a run's inputs.
func (p PullRequest) Render(inputs map[string]any) (title, body string, err error) {
	data := PromptData{Input: inputs}
	if title, err = RenderPrompt(p.Title, data); err != nil {
		return "", "", fmt.Errorf("publish.pull_request.title: %w", err)
	}
	if body, err = RenderPrompt(p.Body, data); err != nil {
		return "", "", fmt.Errorf("publish.pull_request.body: %w", err)
	}
	return strings.TrimSpace(title), strings.TrimSpace(body), nil
}

// PublishAt is what a run publishes when it ends at node end: the end
// node's own publish, else the graph's; nil when neither says.
func (g *Graph) PublishAt(end *Node) *PullRequest {
	if end != nil && end.Publish != nil {
		return end.Publish.PullRequest
	}
	if g.Publish != nil {
		return g.Publish.PullRequest
	}
	return nil
}

// Verdicts of a review (a review node's output.verdict). A review's answer
// is its verdict, then, after a colon or a blank line, its feedback:
// "changes_requested: add a test for the empty slice".
const (
	VerdictApproved         = "approved"
	VerdictChangesRequested = "changes_requested"
	VerdictCommented        = "commented"
	// VerdictMerged: the pull request was merged; the run has nothing
	// left to wait for.
	VerdictMerged = "merged"
)

// Verdicts lists every verdict, in documentation order.
func Verdicts() []string {
	return []string{VerdictApproved, VerdictChangesRequested, VerdictCommented, VerdictMerged}
}

// ErrBadVerdict is a review answer that starts with no verdict.
var ErrBadVerdict = errors.New("not a review verdict")

// verdictWords are the words a person may write for each verdict.
var verdictWords = map[string]string{
	"approved": VerdictApproved, "approve": VerdictApproved, "lgtm": VerdictApproved,
	"changes_requested": VerdictChangesRequested, "changes requested": VerdictChangesRequested,
	"request_changes": VerdictChangesRequested, "request changes": VerdictChangesRequested,
	"commented": VerdictCommented, "comment": VerdictCommented,
	"merged": VerdictMerged,
}

// ParseReview reads a review's answer: its verdict (case and spacing
// aside: "approve", "Changes requested", "lgtm") and the feedback after it.
func ParseReview(answer string) (verdict, feedback string, err error) {
	text := strings.TrimSpace(answer)
	head, rest := text, ""
	if i := strings.IndexAny(text, ":\n"); i >= 0 {
		head, rest = text[:i], text[i+1:]
	}
	key := strings.Join(strings.Fields(strings.ToLower(strings.ReplaceAll(head, "-", "_"))), " ")
	v, ok := verdictWords[key]
	if !ok {
		v, ok = verdictWords[strings.ReplaceAll(key, " ", "_")]
	}
	if !ok {
		return "", "", fmt.Errorf("%w: %q; start the answer with one of %s, then a colon and what to change (\"changes_requested: add a test\")", ErrBadVerdict, cutText(head, 40), strings.Join(Verdicts(), ", "))
	}
	return v, strings.TrimSpace(rest), nil
}

func cutText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// checkPublish checks the graph's publish, and that a graph with a review
// node publishes a pull request for it to wait on.
func (v *validator) checkPublish() {
	v.checkPublishAt(v.g.Publish, "publish", "the graph")
	if v.g.Publish != nil && v.g.Publish.PullRequest != nil {
		return
	}
	for i, n := range v.g.Nodes {
		if n.Kind == KindReview {
			v.add(CodeReviewNoPublish, v.nodePos(i), n.ID, "review node %s waits for a review of the run's pull request, but the graph publishes none; add publish: {pull_request: {title: ...}} at the top level", n.ID)
		}
	}
}

// checkNodePublish checks an end node's publish.
func (v *validator) checkNodePublish(i int, name string) {
	n := &v.g.Nodes[i]
	if n.Kind == KindEnd {
		v.checkPublishAt(n.Publish, nodePath(i)+".publish", "end node "+name)
	}
}

func (v *validator) checkPublishAt(p *Publish, path, what string) {
	if p == nil {
		return
	}
	pos := v.at(path, "")
	if p.PullRequest == nil {
		v.add(CodeBadPublish, pos, "", "the publish of %s says nothing to publish; write publish: {pull_request: {title: ..., body: ..., draft: false}}", what)
		return
	}
	if strings.TrimSpace(p.PullRequest.Title) == "" {
		v.add(CodeBadPublish, v.at(path+".pull_request.title", path), "", "the pull request of %s has no title; write one, e.g. title: \"Fix #{{.input.issue}}: {{.input.title}}\"", what)
	}
	v.checkTemplate(p.PullRequest.Title, "the pull request title of "+what, v.at(path+".pull_request.title", path), "")
	v.checkTemplate(p.PullRequest.Body, "the pull request body of "+what, v.at(path+".pull_request.body", path), "")
}

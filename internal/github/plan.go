package github

import (
	"github.com/tether-run/tether/internal/graph"
)

// Kinds of Plan: what a delivery makes Tether do.
const (
	// PlanStart starts a run (an issue labelled, a `/tether run`).
	PlanStart = "start"
	// PlanAnswer, PlanGuide and PlanCancel act on a run of the thread
	// through the same update, signal and cancel as `tether answer`,
	// `tether guide` and `tether cancel`.
	PlanAnswer = "answer"
	PlanGuide  = "guide"
	PlanCancel = "cancel"
	// PlanReview answers a run's review node with a review of its pull
	// request (queued when the node does not wait yet).
	PlanReview = "review"
	// PlanClosed is the run's pull request closed: merged, it answers the
	// review; closed without a merge, it cancels the run.
	PlanClosed = "closed"
	// PlanRefuse replies why nothing runs (an author whose association is
	// not trusted, a malformed command, a graph the triggers do not name).
	PlanRefuse = "refuse"
)

// Plan is what the workflow that handles a delivery does: decided by the
// console from the verified delivery and the triggers file, carried out
// by the workers, who hold GitHub's credentials. It travels in Temporal's
// history: it holds no secret.
type Plan struct {
	Kind string `json:"kind"`
	// Delivery is X-GitHub-Delivery; every comment the plan posts is
	// found by it again rather than posted twice.
	Delivery     string `json:"delivery"`
	Repo         string `json:"repo"`
	Installation int64  `json:"installation,omitempty"`
	// Thread is the issue or pull request replies go to.
	Thread     int  `json:"thread"`
	ThreadIsPR bool `json:"thread_is_pr,omitempty"`
	// Author is who wrote the comment or review, or labelled the issue.
	Author string `json:"author,omitempty"`
	// Run is the run the delivery names (a pull request's head branch
	// tether/RUN, or run=RUN in a command); "" leaves it to the thread.
	Run string `json:"run,omitempty"`
	// Target is the question (answer) or node (guide), Text the answer,
	// the note or the review (its verdict, then its feedback).
	Target string `json:"target,omitempty"`
	Text   string `json:"text,omitempty"`
	// Merged says a closed pull request was merged.
	Merged bool `json:"merged,omitempty"`
	// Start is the run to start (PlanStart).
	Start *Start `json:"start,omitempty"`
	// Reply is what to reply (PlanRefuse).
	Reply string `json:"reply,omitempty"`
	// Review is the review's id, whose comments a review plan reads.
	Review int64 `json:"review,omitempty"`
	// PullRequest is the pull request a review or close is about.
	PullRequest int `json:"pull_request,omitempty"`
}

// Start is a run a delivery starts.
type Start struct {
	RunID string `json:"run_id"`
	// GraphName is the graph's name in the triggers file.
	GraphName string         `json:"graph_name"`
	Graph     *graph.Graph   `json:"graph"`
	Inputs    map[string]any `json:"inputs,omitempty"`
	// Ref is the branch the run's files come from: the default branch, or
	// a pull request's head. Base is the branch the run's pull request
	// targets (the same).
	Ref      string `json:"ref"`
	IssueURL string `json:"issue_url,omitempty"`
	Title    string `json:"title,omitempty"`
}

// Inputs a graph may declare, which a run started from an issue gets.
const (
	InputIssue  = "issue"
	InputTitle  = "title"
	InputBody   = "body"
	InputAuthor = "author"
	InputURL    = "url"
)

// IssueInputs are the issue's inputs, for a graph to declare.
func IssueInputs() []string {
	return []string{InputIssue, InputTitle, InputBody, InputAuthor, InputURL}
}

// Report is what a run says of itself on its issue and pull request: the
// status comment Tether edits as the run goes, and the end of its pull
// request's body. The workflow builds it from its checkpoint; the worker
// writes it out, with the console's link.
type Report struct {
	Run    string `json:"run"`
	Graph  string `json:"graph"`
	Status string `json:"status"`
	// Node is where the run is (or ended).
	Node string `json:"node,omitempty"`
	// Path is the run's most recent visits, oldest first.
	Path []ReportStep `json:"path,omitempty"`
	// Visits counts every visit; CostUSD and Tokens are what the agents
	// reported spending.
	Visits  int     `json:"visits"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	Tokens  int64   `json:"tokens,omitempty"`
	// Questions are the questions the run waits on.
	Questions []ReportQuestion `json:"questions,omitempty"`
	// PullRequest is the run's pull request, once opened.
	PullRequest    int    `json:"pull_request,omitempty"`
	PullRequestURL string `json:"pull_request_url,omitempty"`
	Error          string `json:"error,omitempty"`
}

// ReportStep is one visit of a report's path.
type ReportStep struct {
	Node    string `json:"node"`
	Visit   int    `json:"visit"`
	Outcome string `json:"outcome,omitempty"`
}

// ReportQuestion is a question the run waits on.
type ReportQuestion struct {
	ID   string `json:"id"`
	Node string `json:"node"`
	Text string `json:"text"`
}

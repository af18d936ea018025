package workflows

import (
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// A review node (graph.KindReview) publishes the run's work as a pull
// request, then waits, like a human node, for its answer: a review of the
// pull request (through the answer update, as `tether answer` sends it),
// "approved", "changes_requested: …", "commented: …" or "merged". A review
// that arrives while the node is not waiting (its writer still works) is
// an answer addressed to the node itself: the run keeps it in its
// checkpoint (Reviews) and the node's next visit takes it at once.

// visitReview publishes, then takes a queued review or waits for one.
func (r *runImpl) visitReview(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, visitNo int) (visitResult, error) {
	qid := fmt.Sprintf("%s-%d", node.ID, visitNo)
	if err := r.publish(ctx, r.g.PublishAt(nil), true); err != nil {
		return visitResult{}, err
	}
	prOut := func(answer string) (visitResult, error) {
		verdict, feedback, err := graph.ParseReview(answer)
		if err != nil {
			return visitResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %s: %v", node.ID, err), runapi.ErrTypeNodeFailed, err)
		}
		out := map[string]any{"answer": answer, "verdict": verdict, "feedback": feedback, "question_id": qid, "pull_request": 0, "url": ""}
		if t := r.cp.GitHub; t != nil {
			out["pull_request"], out["url"] = t.PullRequest, t.PullRequestURL
		}
		return visitResult{output: out}, nil
	}
	// A resumed run whose fail-stop came after this very review.
	if p := r.cp.Pause; p != nil && p.NodeID == node.ID && p.Backend == "" && p.Visit == visitNo && answered(p.Questions) {
		r.cp.Pause, r.cp.Status = nil, runstore.StatusRunning
		v, err := prOut(p.Questions[0].Answer)
		v.answered = p
		return v, err
	}
	if text, ok := r.takeReviews(node.ID); ok {
		return prOut(text)
	}
	text := r.reviewQuestion(node, cur, visitNo)
	qs := []runstore.Question{{ID: qid, Text: text}}
	r.waitFor(ctx, node.ID, visitNo, qs, cur.Input, "review question")
	answers, err := r.ask(ctx, node.ID, qs)
	if err != nil {
		return visitResult{}, err
	}
	v, err := prOut(answers[0])
	v.answered = r.answeredPause(ctx, answers)
	return v, err
}

// reviewQuestion is what the review node asks.
func (r *runImpl) reviewQuestion(node *graph.Node, cur runstore.Cursor, visitNo int) string {
	what := "the run's work"
	if t := r.cp.GitHub; t != nil && t.PullRequest > 0 {
		what = fmt.Sprintf("pull request #%d (%s)", t.PullRequest, t.PullRequestURL)
	}
	text := fmt.Sprintf("Review %s: answer approved, or changes_requested: what to change.", what)
	if node.Question != "" {
		if q, err := graph.RenderPrompt(node.Question, graph.PromptData{Input: cur.Input, Output: r.cp.Outputs[node.ID], Visit: visitNo}); err == nil {
			text = q + "\n\n" + text
		}
	}
	return text
}

// takeReviews takes the reviews queued for node, as one answer: every
// feedback in order, under the verdict of the latest (merged wins).
func (r *runImpl) takeReviews(node string) (string, bool) {
	var verdict string
	var feedback []string
	kept := r.cp.Reviews[:0]
	for _, q := range r.cp.Reviews {
		if q.Node != node {
			kept = append(kept, q)
			continue
		}
		v, f, err := graph.ParseReview(q.Text)
		if err != nil {
			continue
		}
		if verdict != graph.VerdictMerged {
			verdict = v
		}
		if f != "" {
			feedback = append(feedback, f)
		}
	}
	r.cp.Reviews = kept
	if len(r.cp.Reviews) == 0 {
		r.cp.Reviews = nil
	}
	if verdict == "" {
		return "", false
	}
	if len(feedback) == 0 {
		return verdict, true
	}
	return verdict + ": " + strings.Join(feedback, "\n\n"), true
}

// reviewNodeAnswer handles an answer addressed to a review node by its id:
// the node's pending question takes it, or it is queued. ok is false when
// the id names no review node.
func (r *runImpl) reviewNodeAnswer(a runapi.Answer, apply bool) (ok bool, err error) {
	n, found := r.g.Node(a.QuestionID)
	if !found || n.Kind != graph.KindReview {
		return false, nil
	}
	if _, _, err := graph.ParseReview(a.Text); err != nil {
		return true, fmt.Errorf("review node %s: %w", n.ID, err)
	}
	if !apply {
		return true, nil
	}
	for _, q := range r.questions {
		if q.Node == n.ID && !q.Answered {
			q.Answered, q.Answer = true, a.Text
			return true, nil
		}
	}
	if len(r.cp.Reviews) >= maxQueuedReviews {
		r.cp.Reviews = slices.Delete(r.cp.Reviews, 0, 1)
	}
	r.cp.Reviews = append(r.cp.Reviews, runstore.QueuedReview{Node: n.ID, Text: a.Text})
	return true, nil
}

// maxQueuedReviews bounds the reviews a run keeps while its review node
// does not wait.
const maxQueuedReviews = 20

// validReviewAnswer checks an answer to a pending review question.
func (r *runImpl) validReviewAnswer(q *question, a runapi.Answer) error {
	if n, ok := r.g.Node(q.Node); ok && n.Kind == graph.KindReview {
		if _, _, err := graph.ParseReview(a.Text); err != nil {
			return err
		}
	}
	return nil
}

// publish pushes the run's work to its pull request (nothing for a run
// without a thread or a publish): before a review waits, and at an end.
func (r *runImpl) publish(ctx workflow.Context, pr *graph.PullRequest, waiting bool) error {
	t := r.cp.GitHub
	if pr == nil || t == nil {
		return nil
	}
	title, body, err := pr.Render(r.cp.Inputs)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("graph %q: %v", r.g.Name, err), runapi.ErrTypeGraph, err)
	}
	rep := r.githubReport()
	if waiting {
		rep.Status = runstore.StatusWaiting
	}
	req := &activities.GitHubPublishRequest{Thread: r.threadCopy(), Workspace: r.cp.Workspace, Title: title, Body: body, Draft: pr.Draft, Report: rep, Waiting: waiting}
	var out activities.GitHubPublished
	if err := workflow.ExecuteActivity(githubOptions(ctx, "publish to "+t.Repo), acts.GitHubPublish, req).Get(ctx, &out); err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s could not publish its pull request: %s", r.cp.RunID, activities.ErrorText(err)), runapi.ErrTypeNodeFailed, err)
	}
	if out.PullRequest == 0 {
		return nil // the run changed nothing yet: no pull request to open
	}
	t.PullRequest, t.PullRequestURL, t.Head = out.PullRequest, out.URL, out.Head
	r.threadVisibility(ctx)
	if out.State == "closed" && !out.Merged {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("pull request %s#%d of run %s is closed; the run has nowhere to publish", t.Repo, out.PullRequest, r.cp.RunID), runapi.ErrTypeNodeFailed, nil)
	}
	if out.Merged && waiting {
		r.cp.Reviews = append(r.cp.Reviews, runstore.QueuedReview{Node: r.current[len(r.current)-1], Text: graph.VerdictMerged})
	}
	return nil
}

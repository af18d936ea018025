package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// visitHuman asks the node's question and waits for its answer.
func (r *runImpl) visitHuman(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, visitNo int, inBranch bool) (visitResult, error) {
	qid := fmt.Sprintf("%s-%d", node.ID, visitNo)
	text, err := graph.RenderPrompt(node.Question, graph.PromptData{Input: cur.Input, Output: r.cp.Outputs[node.ID], Visit: visitNo})
	if err != nil {
		text = node.Question
	}
	qs := []runstore.Question{{ID: qid, Text: text, AllowEmpty: node.AllowEmpty}}
	// A run resumed from a fail-stop that came after this very question was
	// answered takes that answer, instead of asking again.
	if p := r.cp.Pause; !inBranch && p != nil && p.NodeID == node.ID && p.Backend == "" && p.Visit == visitNo && answered(p.Questions) {
		r.cp.Pause, r.cp.Status = nil, runstore.StatusRunning
		return visitResult{output: map[string]any{"answer": p.Questions[0].Answer, "question_id": qid}, answered: p}, nil
	}
	if !inBranch {
		r.waitFor(ctx, node.ID, visitNo, qs, cur.Input, "human question")
	}
	answers, err := r.ask(ctx, node.ID, qs)
	if err != nil {
		return visitResult{}, err
	}
	v := visitResult{output: map[string]any{"answer": answers[0], "question_id": qid}}
	if !inBranch {
		v.answered = r.answeredPause(ctx, answers)
	}
	return v, nil
}

// waitFor posts qs, the questions of node's visit visitNo, and records the
// run as waiting for them: its pause, its status and a checkpoint. A
// checkpoint that fails only warns (what names the question): Temporal's
// history keeps the wait durable; the run store catches up at the next
// checkpoint.
func (r *runImpl) waitFor(ctx workflow.Context, node string, visitNo int, qs []runstore.Question, input map[string]any, what string) {
	r.postQuestions(ctx, node, qs)
	r.cp.Pause = &runstore.PauseInfo{NodeID: node, Visit: visitNo, Questions: qs, Input: input}
	r.cp.Status = runstore.StatusWaiting
	r.setStatus(ctx, r.cp.Status)
	if err := r.save(ctx); err != nil {
		workflow.GetLogger(ctx).Warn("could not checkpoint the "+what+"; waiting anyway", "node", node, "error", err.Error())
	}
}

// answeredPause ends the wait waitFor began: it marks the pause's
// questions answered with answers, in order, sets the run running again,
// and returns the answered pause.
func (r *runImpl) answeredPause(ctx workflow.Context, answers []string) *runstore.PauseInfo {
	p := r.cp.Pause
	for i := range p.Questions {
		p.Questions[i].Answered, p.Questions[i].Answer = true, answers[i]
	}
	r.cp.Pause = nil
	r.cp.Status = runstore.StatusRunning
	r.setStatus(ctx, r.cp.Status)
	return p
}

func answered(qs []runstore.Question) bool {
	for _, q := range qs {
		if !q.Answered {
			return false
		}
	}
	return len(qs) > 0
}

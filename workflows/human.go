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
		r.postQuestions(ctx, node.ID, qs)
		r.cp.Pause = &runstore.PauseInfo{NodeID: node.ID, Visit: visitNo, Questions: qs, Input: cur.Input}
		r.cp.Status = runstore.StatusWaiting
		r.setStatus(ctx, r.cp.Status)
		if err := r.save(ctx); err != nil {
			// Temporal's history keeps the wait durable; the run store
			// catches up at the next checkpoint.
			workflow.GetLogger(ctx).Warn("could not checkpoint the human question; waiting anyway", "node", node.ID, "error", err.Error())
		}
	}
	answers, err := r.ask(ctx, node.ID, qs)
	if err != nil {
		return visitResult{}, err
	}
	v := visitResult{output: map[string]any{"answer": answers[0], "question_id": qid}}
	if !inBranch {
		v.answered = r.cp.Pause
		for i := range v.answered.Questions {
			v.answered.Questions[i].Answered, v.answered.Questions[i].Answer = true, answers[i]
		}
		r.cp.Pause = nil
		r.cp.Status = runstore.StatusRunning
		r.setStatus(ctx, r.cp.Status)
	}
	return v, nil
}

func answered(qs []runstore.Question) bool {
	for _, q := range qs {
		if !q.Answered {
			return false
		}
	}
	return len(qs) > 0
}

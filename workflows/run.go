package workflows

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/telemetry"
)

// visitOrTakeEnded visits node at cur, unless ended is that very visit,
// which ran and ended before the run failed on what came after it: its
// output is the run's, and it is not run again (its effects with it).
func (r *runImpl) visitOrTakeEnded(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, ended *runstore.EndedVisit) (visitResult, error) {
	if ended != nil && ended.Node == cur.Node && ended.Visit == r.cp.Visits[cur.Node] && len(r.cp.Cursor) == 1 {
		workflow.GetLogger(ctx).Info("taking the output of the visit that ended before the run failed", "node", cur.Node, "visit", ended.Visit)
		return visitResult{output: r.cp.Outputs[cur.Node]}, nil
	}
	return r.visit(ctx, node, cur, &scope{})
}

// run walks the graph from the checkpoint's cursor until an end node.
func (r *runImpl) run(ctx workflow.Context) (*runapi.GraphRunResult, error) {
	// An execution seeded with a visit that ended before its edges failed
	// chooses them again from its output (changeEndedVisit).
	keepEnded := r.at(ctx, changeEndedVisit, versionEndedVisit)
	ended := r.cp.Ended
	r.cp.Ended = nil
	if !keepEnded {
		ended = nil
	}
	for {
		if len(r.cp.Cursor) == 0 {
			return nil, r.fail(ctx, temporal.NewNonRetryableApplicationError("run has nothing left to visit and never reached an end node", runapi.ErrTypeGraph, nil))
		}
		if mv, _ := r.moveDue(ctx); mv != nil {
			// A visit that ended before the run failed stays ended on the
			// new build.
			r.cp.Ended = ended
			return nil, r.continueAsNew(ctx, mv)
		}
		if r.continueAsNewDue(ctx) {
			return nil, r.continueAsNew(ctx, nil)
		}
		if len(r.cp.Cursor) > 1 {
			// A fan-out was in flight when this checkpoint was taken: run
			// its branches again from their start.
			next, err := r.fanout(ctx, r.cp.Cursor, nil)
			if err != nil {
				return nil, r.fail(ctx, err)
			}
			r.cp.Cursor = []runstore.Cursor{next}
			continue
		}
		cur := r.cp.Cursor[0]
		node, ok := r.g.Node(cur.Node)
		if !ok {
			return nil, r.fail(ctx, temporal.NewNonRetryableApplicationError(fmt.Sprintf("edge leads to unknown node %q", cur.Node), runapi.ErrTypeGraph, nil))
		}
		if node.Kind == graph.KindEnd {
			return r.complete(ctx, node, cur)
		}
		v, err := r.visitOrTakeEnded(ctx, node, cur, ended)
		if mv := moveOf(err); mv != nil {
			return nil, r.continueAsNew(ctx, mv)
		}
		if err != nil {
			return nil, r.fail(ctx, err)
		}
		ended = nil
		if v.budgetStop != "" {
			return nil, r.stopMidVisit(ctx, node, cur, v)
		}
		next, err := r.selectNext(node, cur, v.output)
		if err != nil {
			// The visit itself is done: record it (and any new slot), then
			// fail on the graph error.
			r.cp.Cursor = []runstore.Cursor{cur}
			r.cp.Status = runstore.StatusFailed
			r.cp.Error = activities.ErrorText(err)
			if keepEnded {
				r.cp.Ended = &runstore.EndedVisit{Node: cur.Node, Visit: r.cp.Visits[cur.Node]}
			}
			if serr := r.save(ctx); serr != nil {
				return nil, r.failResumable(ctx, cur, serr)
			}
			return nil, err
		}
		// The required checkpoint: the visit's output, its new slot, and
		// the next cursor. Nothing after this point may happen before it
		// is durable.
		r.cp.Cursor = next
		if err := r.save(ctx); err != nil {
			r.cp.Cursor = []runstore.Cursor{cur}
			if v.answered != nil {
				r.cp.Pause = v.answered
			}
			return nil, r.failResumable(ctx, cur, err)
		}
		r.deleteBlobs(ctx, v.deleteAfterCommit)
		r.reportGitHub(ctx)
		if err := r.stopIfOverBudget(ctx, changeBudgets, versionBudgets); err != nil {
			return nil, err
		}
		if len(next) > 1 || node.Fanout == graph.FanoutAll {
			join, err := r.fanout(ctx, next, nil)
			if err != nil {
				return nil, r.fail(ctx, err)
			}
			r.cp.Cursor = []runstore.Cursor{join}
			if err := r.stopIfOverBudget(ctx, changeBudgets, versionBudgets); err != nil {
				return nil, err
			}
		}
	}
}

// visitResult is one finished visit.
type visitResult struct {
	output map[string]any
	// deleteAfterCommit are blobs that become garbage once the checkpoint
	// recording this visit is durable, and not before.
	deleteAfterCommit []string
	// answered is a human node's question with its accepted answer: if the
	// checkpoint recording the visit fails, the fail-stop keeps it, so the
	// resumed run takes the answer instead of asking again.
	answered *runstore.PauseInfo
	// guidance are the notes the visit took, for its path step.
	guidance []runstore.Guidance
	// usage is what the visit cost, every round of it.
	usage agent.Usage
	// budgetStop says which budget a spent model call stopped the visit
	// at, mid-turn (changeBudgetMidVisit): its output is not the node's,
	// and the run stops resumably on the node.
	budgetStop string
}

// visit runs one node and records its output and path step in memory.
func (r *runImpl) visit(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, sc *scope) (visitResult, error) {
	inBranch := sc.branch
	visitNo := r.cp.Visits[node.ID] + 1
	if node.MaxVisits > 0 && visitNo > node.MaxVisits {
		return visitResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("node %q would be visited a %s time but max_visits is %d; raise max_visits or change the edges that loop back to it", node.ID, ordinal(visitNo), node.MaxVisits),
			runapi.ErrTypeMaxVisits, nil)
	}
	r.cp.Visits[node.ID] = visitNo
	r.current = append(r.current, node.ID)
	r.setNode(ctx, node.ID)
	defer func() { r.current = slices.DeleteFunc(r.current, func(s string) bool { return s == node.ID }) }()
	started := workflow.Now(ctx)

	var (
		v   visitResult
		err error
	)
	switch {
	case node.Kind == graph.KindAgent && r.oneTripVisits(ctx):
		v, err = r.agentVisit(ctx, node, cur, visitNo, sc)
	case node.Kind == graph.KindAgent:
		v, err = r.legacyVisitAgent(ctx, node, cur, visitNo, inBranch)
	case node.Kind == graph.KindHuman:
		v, err = r.visitHuman(ctx, node, cur, visitNo, inBranch)
	case node.Kind == graph.KindTool && r.oneTripVisits(ctx):
		v, err = r.toolVisit(ctx, node, cur, visitNo, sc)
	case node.Kind == graph.KindTool:
		v, err = r.legacyVisitTool(ctx, node, cur, visitNo, inBranch)
	case node.Kind == graph.KindJoin:
		v = visitResult{output: maps.Clone(cur.Input)}
	case node.Kind == graph.KindReview && !inBranch:
		v, err = r.visitReview(ctx, node, cur, visitNo)
	default:
		err = temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %q has kind %q, which cannot be visited here", node.ID, node.Kind), runapi.ErrTypeGraph, nil)
	}
	step := runstore.Step{Node: node.ID, Visit: visitNo, Status: "ok", StartedAt: started.UTC().Format(time.RFC3339Nano), DurationMS: workflow.Now(ctx).Sub(started).Milliseconds()}
	if err != nil {
		if errors.Is(ctx.Err(), workflow.ErrCanceled) {
			// A cancel stopped it: endCanceled decides whether it counts.
			r.canceled = append(r.canceled, runstore.EndedVisit{Node: node.ID, Visit: visitNo})
		}
		if moveOf(err) == nil {
			r.addStep(failedStep(step, err))
		}
		return v, err
	}
	if v.budgetStop != "" {
		// A turn cut short: the node's output stays its last finished
		// visit's.
		step = stoppedStep(step, v.budgetStop, v.usage)
		step.Guidance = v.guidance
		r.addStep(step)
		return v, nil
	}
	r.setOutput(node.ID, visitNo, v.output)
	r.noteRetry(ctx, node.ID, visitNo, v.output)
	step = finishedStep(step, node, v.output, v.usage)
	step.Guidance = v.guidance
	r.addStep(step)
	return v, nil
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

func (r *runImpl) addStep(s runstore.Step) {
	r.cp.Path = append(r.cp.Path, s)
	r.cp.PathTotal++
	if over := len(r.cp.Path) - maxPathSteps; over > 0 {
		r.cp.Path = slices.Delete(r.cp.Path, 0, over)
	}
}

// setOutput stores a node's output (never a transient key, never a ref)
// and keeps its previous output as a loop snapshot.
func (r *runImpl) setOutput(node string, visit int, out map[string]any) {
	if prev, ok := r.cp.Outputs[node]; ok {
		// Snapshots keep long strings cut, like the state query: they are
		// history for people, and the checkpoint they live in travels in
		// continue-as-new input, which Temporal bounds.
		r.cp.LoopSnapshots = append(r.cp.LoopSnapshots, runstore.LoopSnapshot{Node: node, Visit: visit - 1, Output: queryValue(prev)})
		var kept []runstore.LoopSnapshot
		count := 0
		for i := len(r.cp.LoopSnapshots) - 1; i >= 0; i-- {
			s := r.cp.LoopSnapshots[i]
			if s.Node == node {
				count++
				if count > maxLoopSnapshots {
					continue
				}
			}
			kept = append(kept, s)
		}
		slices.Reverse(kept)
		r.cp.LoopSnapshots = kept
	}
	r.cp.Outputs[node] = sanitizeOutput(out)
}

// sanitizeOutput drops the keys that must never be stored on an output: the
// transient session blob carrier and any state key (ADR-089: takeSession-
// StateBlob before every rs.outputs assignment; no ref on outputs).
func sanitizeOutput(out map[string]any) map[string]any {
	o := maps.Clone(out)
	if o == nil {
		o = map[string]any{}
	}
	delete(o, agent.SessionStateBlobKey)
	delete(o, agent.SessionStateKey)
	delete(o, "_session_state_ref")
	return o
}

// selectNext evaluates the node's edges in order. The first match wins,
// unless the node fans out, when every match is taken.
func (r *runImpl) selectNext(node *graph.Node, cur runstore.Cursor, out map[string]any) ([]runstore.Cursor, error) {
	env := graph.Env{Output: out, Input: cur.Input, Visits: r.cp.Visits[node.ID]}
	var next []runstore.Cursor
	for _, e := range r.g.EdgesFrom(node.ID) {
		ok := true
		if e.When != "" {
			var err error
			ok, err = graph.EvalWhen(e.When, env)
			if err != nil {
				return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %s, edge %s -> %s: %s; the values it saw: output %s, input %s, visits %d", node.ID, e.From, e.To, strings.TrimPrefix(err.Error(), "graph: "), brief(out), brief(cur.Input), env.Visits), runapi.ErrTypeGraph, nil)
			}
		}
		if !ok {
			continue
		}
		input, delivered, err := r.edgeInput(e, env)
		if err != nil {
			return nil, err
		}
		next = append(next, runstore.Cursor{Node: e.To, Input: input, From: node.ID, Delivered: &delivered})
		r.addTransition(e.From, e.To)
		if node.Fanout != graph.FanoutAll {
			break
		}
	}
	if len(next) == 0 {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("no edge out of node %q matched its output %s; add an edge without `when` as a default, or fix the conditions", node.ID, brief(out)),
			runapi.ErrTypeNoEdge, nil)
	}
	return next, nil
}

// edgeInput is the next node's input: the run inputs, overlaid with either
// the edge's `with` mapping or, when it has none, the source output without
// reserved keys (so no session id travels unless an edge maps it). It also
// returns the _session_id the mapping itself produced, the only one the
// edge delivered.
func (r *runImpl) edgeInput(e graph.Edge, env graph.Env) (map[string]any, string, error) {
	input := maps.Clone(r.cp.Inputs)
	if input == nil {
		input = map[string]any{}
	}
	if len(e.With) == 0 {
		for _, k := range sortedKeys(env.Output) {
			if !strings.HasPrefix(k, "_") {
				input[k] = env.Output[k]
			}
		}
		return input, "", nil
	}
	mapped, err := graph.EvalWith(e.With, env)
	if err != nil {
		return nil, "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %s, edge %s -> %s: %s; the values it saw: output %s, input %s, visits %d", e.From, e.From, e.To, strings.TrimPrefix(err.Error(), "graph: "), brief(env.Output), brief(env.Input), env.Visits), runapi.ErrTypeGraph, nil)
	}
	for _, k := range sortedKeys(mapped) {
		input[k] = mapped[k]
	}
	delivered, _ := mapped[agent.SessionIDKey].(string)
	return input, delivered, nil
}

func (r *runImpl) addTransition(from, to string) {
	t := runstore.Transition{From: from, To: to}
	if !slices.Contains(r.cp.Transitions, t) {
		r.cp.Transitions = append(r.cp.Transitions, t)
	}
}

func brief(out map[string]any) string {
	var parts []string
	for _, k := range sortedKeys(out) {
		if strings.HasPrefix(k, "_") {
			continue
		}
		s := fmt.Sprintf("%v", out[k])
		if len(s) > 80 {
			s = s[:80] + "…"
		}
		parts = append(parts, fmt.Sprintf("%s=%q", k, s))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// complete finishes the run at an end node.
func (r *runImpl) complete(ctx workflow.Context, node *graph.Node, cur runstore.Cursor) (*runapi.GraphRunResult, error) {
	visitNo := r.cp.Visits[node.ID] + 1
	r.cp.Visits[node.ID] = visitNo
	r.addStep(runstore.Step{Node: node.ID, Visit: visitNo, Status: "ok", Outcome: runstore.OutcomeOK, StartedAt: workflow.Now(ctx).UTC().Format(time.RFC3339Nano)})
	r.setOutput(node.ID, visitNo, cur.Input)
	if err := r.publish(ctx, r.g.PublishAt(node), false); err != nil {
		return nil, r.fail(ctx, err)
	}
	r.cp.Cursor = nil
	r.cp.Status = runstore.StatusCompleted
	r.setStatus(ctx, r.cp.Status)
	if err := r.save(ctx); err != nil {
		r.cp.Cursor = []runstore.Cursor{cur}
		return nil, r.failResumable(ctx, cur, err)
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return nil, err
	}
	return &runapi.GraphRunResult{
		RunID:   r.cp.RunID,
		Status:  r.cp.Status,
		EndNode: node.ID,
		Output:  queryValue(cur.Input),
		Path:    r.cp.Path,
		Visits:  r.cp.PathTotal,
		Usage:   runUsage(r.cp),
		// A result is no command: replays compare none of it.
		NodeUsage:  maps.Clone(r.cp.Usage),
		NodeVisits: maps.Clone(r.cp.Visits),
	}, nil
}

// fail records a failed run in the run store (best effort: the workflow's
// own failure is durable in Temporal's history either way) and returns the
// error to fail the workflow with.
func (r *runImpl) fail(ctx workflow.Context, err error) error {
	if _, stopped := StopError(err); stopped {
		return err
	}
	if temporal.IsCanceledError(err) {
		return err
	}
	r.cp.Status = runstore.StatusFailed
	r.cp.Error = activities.ErrorText(err)
	r.setStatus(ctx, r.cp.Status)
	if serr := r.save(ctx); serr != nil {
		workflow.GetLogger(ctx).Warn("could not record the failed run in the run store", "error", serr.Error())
	}
	return err
}

// failResumable is ADR-089's FailRunResumable: the workflow fails with a
// typed, non-retryable error whose details carry the checkpoint, new slot
// included, so `tether resume` continues visit N of the conversation even
// though the run store never received it.
func (r *runImpl) failResumable(ctx workflow.Context, cur runstore.Cursor, cause error) error {
	r.cp.Status = runstore.StatusFailedResumable
	r.cp.Error = activities.ErrorText(cause)
	r.setStatus(ctx, r.cp.Status)
	cp := *r.cp
	workflow.GetLogger(ctx).Error("required checkpoint failed; failing the run resumably", "node", cur.Node, "error", activities.ErrorText(cause))
	telemetry.WorkflowFailStop(ctx)
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("required checkpoint failed at node %q: %s; the run can continue with `tether resume %s`", cur.Node, activities.ErrorText(cause), r.cp.RunID),
		runapi.ErrTypeResumable, cause, &cp)
}

// StopError is err as a resumable stop of a run (runapi.StopError).
func StopError(err error) (*temporal.ApplicationError, bool) { return runapi.StopError(err) }

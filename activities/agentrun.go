package activities

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/telemetry"
)

// agentRun is one execution of an agent on this worker.
type agentRun struct {
	runID, nodeID string
	visit         int
	node          graph.Node
	b             agent.Backend
	env           agent.Env
	input, prev   map[string]any
	sessionID     string
	fork          bool
	answer        *agent.Answer
	packTo        string
	pauseTo       string
	// incremental packs to packTo incrementally (extending extend when it
	// allows, else whole with a manifest for the next visit).
	incremental bool
	extend      *extension
	// lostAnswer is a human's answer to a question asked in a conversation
	// that could not be restored; it goes into the fresh one's prompt.
	lostAnswer string
	// workspace is what the prompt sees as .workspace.
	workspace map[string]any
	// lost is what earlier attempts of the visit did before they were
	// interrupted: the agent is told, before its prompt (retry.go).
	lost *agent.Interruption
	// guidance are people's notes for this visit, after the prompt.
	guidance []string
	// limits are the budgets the visit counts against; continues says
	// why an earlier attempt of it stopped mid-turn.
	limits    []agent.Limit
	continues string
}

// BudgetContinue is what an agent that a spent budget stopped mid-turn is
// told when its visit goes on in its own conversation, after the budget
// was raised; %s is why it stopped.
const BudgetContinue = "Your previous turn was stopped before it finished because %s. The budget has been raised: carry on with the task from where you stopped."

// BudgetContinueAfresh goes before the prompt of a visit that goes on
// from a stopped turn but could not resume that conversation.
const BudgetContinueAfresh = "An earlier attempt at this task was stopped before it finished because %s; its changes to the files are kept. Carry on with the task."

// request is the backend request of the run, without its prompt.
func (r agentRun) request() agent.Request {
	return agent.Request{
		RunID: r.runID, NodeID: r.nodeID, Visit: r.visit, Input: r.input,
		SessionID: r.sessionID, Fork: r.fork,
		Model: r.node.Model, Script: r.node.Script, Answer: r.answer, Env: r.env,
		Settings: r.node.AgentSettings(), Limits: r.limits,
	}
}

// runAgent renders the prompt, runs the backend, stamps the output and
// packs the session (to packTo, or to pauseTo when the agent asked).
func (a *Activities) runAgent(ctx context.Context, r agentRun) (*ExecuteResult, error) {
	prompt, err := graph.RenderPrompt(r.node.Prompt, graph.PromptData{Input: r.input, Output: r.prev, Visit: r.visit, Workspace: r.workspace})
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %q: prompt: %s", r.nodeID, graph.TemplateReason(err)), ErrTypeBadRequest, nil)
	}
	if r.lostAnswer != "" {
		prompt += "\n\n" + LostAnswerIntro + "\n" + r.lostAnswer
	}
	if r.lost != nil {
		prompt = r.lost.Note() + "\n\n" + prompt
	}
	switch {
	case r.continues != "" && r.sessionID != "" && !r.fork && r.answer == nil:
		// The conversation holds the task and the turn so far.
		prompt = fmt.Sprintf(BudgetContinue, r.continues)
	case r.continues != "":
		prompt = fmt.Sprintf(BudgetContinueAfresh, r.continues) + "\n\n" + prompt
	}
	prompt += guidanceText(r.guidance)

	// A worker that is shutting down (a pod being recycled) ends the CLI
	// and says so, so the workflow restarts the visit on another worker
	// instead of failing the node.
	runCtx, stopping := a.untilWorkerStops(ctx)
	stop := a.heartbeat(ctx)
	if r.sessionID != "" {
		a.live.set(liveKey(r.b.Name(), r.env, r.sessionID), liveSession{}) // the visit changes it
	}
	breq := r.request()
	breq.Prompt = prompt
	// The heartbeats carry the visit's latest progress (bounded), so that
	// `tether status` shows what a long visit is doing.
	if key := progressKey(ctx); key != "" {
		visitProgress.begin(key, agent.Progress{Node: r.nodeID, Visit: r.visit, Backend: r.b.Name()})
		breq.Progress = func(p agent.Progress) { visitProgress.update(key, p) }
	}
	endPhase := telemetry.StartPhase(ctx, telemetry.PhaseRun)
	res, err := r.b.Execute(runCtx, breq)
	endPhase()
	stop()
	if err != nil && stopping() {
		return nil, temporal.NewApplicationError(fmt.Sprintf("worker %s stopped during the visit of node %q: %v", a.Queue, r.nodeID, err), ErrTypeWorkerStopping, err)
	}
	if err != nil {
		if t := agent.ErrorType(err); t != "" {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), t, err)
		}
		return nil, err
	}

	if res.NeedsInteraction != nil && breq.Settings.NoAskUser {
		// No backend offers a way to ask to such a node; one that asked
		// anyway (a script) would leave the run waiting on an answer the
		// graph says never comes.
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"node %q asked the user, and its graph sets ask_user: false; remove that setting to let it ask, or change what it is told", r.nodeID),
			ErrTypeBadRequest, nil)
	}
	out := r.output(res)
	result := &ExecuteResult{
		Output: out, Backend: r.b.Name(), SessionID: res.SessionID, Fingerprint: res.Fingerprint, Queue: a.Queue,
		Usage: res.Usage, BudgetStop: res.BudgetStop,
	}

	key := r.packTo
	if res.NeedsInteraction != nil {
		result.Questions = res.NeedsInteraction.Questions
		result.PendingToolUseID = res.NeedsInteraction.PendingToolUseID
		key = r.pauseTo
	}
	if key != "" {
		var from *extension
		incremental := r.incremental && key == r.packTo
		if incremental && res.SessionID == r.sessionID && !r.fork {
			from = r.extend
		}
		var pk packed
		endPhase := telemetry.StartPhase(ctx, telemetry.PhasePack)
		pk, result.PackError = a.pack(ctx, r.b, r.env, res.SessionID, key, incremental, from)
		endPhase()
		if result.Packed = result.PackError == ""; result.Packed {
			result.PackedTo, result.PackDigest, result.PackSize, result.PackDeltaOf = key, pk.digest, pk.size, pk.deltaOf
			if p := r.b.Packer(r.env); p != nil {
				a.live.set(liveKey(r.b.Name(), r.env, res.SessionID), liveSession{digest: pk.digest, sig: signature(ctx, p, res.SessionID), manifest: pk.manifest})
			}
		}
	}
	if res.BudgetStop != "" {
		a.logger().Warn("a budget was spent mid-visit; the visit stopped", "run", r.runID, "node", r.nodeID, "visit", r.visit, "why", res.BudgetStop)
	}
	a.logger().Info("visit done", "run", r.runID, "node", r.nodeID, "visit", r.visit, "backend", r.b.Name(), "session_id", res.SessionID, "asked", len(result.Questions), "packed", result.Packed)
	return result, nil
}

// output is the visit's output: the reply (cut to MaxOutputText), its
// structured fields, and Tether's stamps and notes.
func (r agentRun) output(res agent.Result) map[string]any {
	out := map[string]any{"text": res.Text}
	if len(res.Text) > MaxOutputText {
		// Temporal bounds an activity result (2 MB); a larger one would
		// fail the completion and run the agent again. The whole reply
		// stays in the agent's own session.
		out["text"] = strings.ToValidUTF8(res.Text[:MaxOutputText], "") + fmt.Sprintf("\n… [%d more bytes cut; the whole reply is in the agent's session]", len(res.Text)-MaxOutputText)
		out["text_truncated"] = true
	}
	for k, v := range res.Structured {
		if strings.HasPrefix(k, "_") {
			// Tether's own keys (its stamps and notes) are Tether's to
			// write: a reply cannot forge a retry or session note.
			continue
		}
		out[k] = v
	}
	out[agent.SessionIDKey] = res.SessionID
	out[agent.BackendKey] = r.b.Name()
	out[agent.SessionFingerprintKey] = res.Fingerprint
	if !res.Usage.IsZero() {
		out[agent.UsageKey] = res.Usage
	}
	if r.lost != nil {
		out[agent.RetryNoteKey] = r.lost.Note()
	}
	return out
}

// pickBackend returns the backend to run: the planned one if it can run
// here, else the node's first fallback that can. A session id never moves
// to another backend.
func (a *Activities) pickBackend(planned string, node graph.Node, sessionID string) (agent.Backend, string, error) {
	candidates := append([]string{planned, node.Backend}, node.Fallback...)
	var reasons []string
	for _, name := range candidates {
		b, ok := a.Backends.Get(name)
		if !ok {
			reasons = append(reasons, name+": not registered on this worker")
			continue
		}
		if av, ok := b.(Availability); ok {
			if err := av.Available(); err != nil {
				reasons = append(reasons, fmt.Sprintf("%s: %v", name, err))
				continue
			}
		}
		if name != planned {
			return b, "", nil
		}
		return b, sessionID, nil
	}
	err := fmt.Errorf("%w: node %q can run on none of its backends (%v); install the CLI on the worker or add a fallback", agent.ErrNotInstalled, node.ID, reasons)
	return nil, "", temporal.NewNonRetryableApplicationError(err.Error(), agent.ErrorType(err), err)
}

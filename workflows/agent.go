package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blobref"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/resolve"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// scope is where a visit runs: the run's trunk, or a fan-out branch. A
// branch's pause lives only in workflow memory (a trunk pause is the
// checkpoint's, so status, rewind and resume see it), and a branch's
// changes to the workspace are not kept.
type scope struct {
	branch bool
	pause  *runstore.PauseInfo
	// name and ws are a branch's own line of the workspace
	// (changeBranchWorkspaces): its name, and its head, which each of its
	// visits restores and commits on. A branch of a run recorded before
	// that has no name and runs on a throwaway copy of the trunk's.
	name string
	ws   *runstore.WorkspaceState
}

// workspaceOf is the snapshot a visit in sc runs on.
func (r *runImpl) workspaceOf(sc *scope) *runstore.WorkspaceState {
	if sc.name != "" {
		return sc.ws
	}
	return r.cp.Workspace
}

func (r *runImpl) pauseOf(sc *scope) *runstore.PauseInfo {
	if sc.branch {
		return sc.pause
	}
	return r.cp.Pause
}

func (r *runImpl) setPause(sc *scope, p *runstore.PauseInfo) {
	if sc.branch {
		sc.pause = p
		return
	}
	r.cp.Pause = p
}

// agentVisit is one visit of an agent node, in ADR-089's steps: resolve
// which conversation it may continue; restore, execute and pack it on one
// worker in one activity; on an ask_user, pause on the pause ref until the
// answer comes and go round again; then commit the new slot in memory. The
// required checkpoint that makes the slot durable, and the deletes after
// it, are run's.
func (r *runImpl) agentVisit(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, visitNo int, sc *scope) (visitResult, error) {
	answer, err := r.awaitRestoredPause(ctx, node, sc)
	if err != nil {
		return visitResult{}, err
	}
	var (
		lost []string
		used agent.Usage // by every round of the visit
	)
	// A person's notes go with the visit's prompt, once: not again with
	// the answer to a question the visit asked.
	notes := r.guidanceFor(ctx, node.ID)
	guidance := guidanceTexts(notes)
	midVisit := r.budgetsMidVisit(ctx, node, sc)
	continues := r.continues(node, visitNo, sc)
	for {
		plan, refused := r.resolve(ctx, node, cur, answer != nil, sc)
		var extra visitExtras
		if midVisit {
			extra.limits = runapi.Limits(r.cp, node.ID)
		}
		if answer == nil {
			extra.continues = continues
		}
		res, unnamed, err := r.oneTrip(ctx, node, visitNo, plan, answer, guidance, extra, sc)
		if err != nil {
			return visitResult{}, err
		}
		if refused != "" && res.SessionNote == "" && res.Output != nil {
			res.Output[activities.SessionNoteKey] = refused
		}
		lost = append(lost, unnamed...)
		r.addUsage(node.ID, res.Usage)
		used = used.Add(res.Usage)
		r.takeWorkspace(res, sc)
		guidance = nil
		if len(res.Questions) > 0 {
			if answer, err = r.pauseOnQuestion(ctx, node, cur, visitNo, res, sc); err != nil {
				return visitResult{}, err
			}
			continue
		}
		v := r.commit(ctx, node, res, sc)
		v.usage = used
		if midVisit && res.BudgetStop != "" {
			v.budgetStop = res.BudgetStop
		} else if s := r.cp.Stopped; s != nil && s.Node == node.ID && !sc.branch {
			r.cp.Stopped = nil
		}
		if len(notes) > 0 {
			r.tookGuidance(node.ID, notes)
			v.guidance = notes
		}
		if len(lost) > 0 && r.at(ctx, changeLostAttemptBlobs, versionLostAttemptBlobs) {
			v.deleteAfterCommit = append(v.deleteAfterCommit, lost...)
		}
		return v, nil
	}
}

// awaitRestoredPause waits for the answer of an ask_user that a run
// restored from a checkpoint was paused on, instead of executing again.
func (r *runImpl) awaitRestoredPause(ctx workflow.Context, node *graph.Node, sc *scope) (*agent.Answer, error) {
	if p := r.pauseOf(sc); p != nil && p.NodeID == node.ID && p.Backend != "" {
		return r.awaitAgentAnswer(ctx, node, p)
	}
	return nil, nil
}

// resolve is ADR-089's resolution order for this visit (internal/resolve).
// Besides the plan, it returns why an inbound session id was not taken up
// (changeEdgeDelivery), for the visit's output to say.
func (r *runImpl) resolve(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, answering bool, sc *scope) (resolve.Plan, string) {
	var deliveries []resolve.Delivery
	id, _ := cur.Input[agent.SessionIDKey].(string)
	checked := false
	if cur.From != "" {
		delivered := id
		if id != "" && r.at(ctx, changeEdgeDelivery, versionEdgeDelivery) {
			// Rule 1: only what the edge's own mapping produced was
			// delivered. Runs recorded before took the final input's id,
			// which may have come from the run's inputs.
			delivered, checked = r.delivered(cur), true
		}
		deliveries = append(deliveries, resolve.Delivery{From: cur.From, SessionID: delivered})
	}
	plan := resolve.Resolve(resolve.Request{
		Node: *node, Backend: r.effectiveBackend(node), Input: cur.Input, Deliveries: deliveries, Answering: answering,
		Outputs: r.cp.Outputs, NodeSessions: r.cp.NodeSessions, Pause: r.pauseOf(sc),
	})
	if checked && plan.Kind == resolve.Fresh && node.Session != graph.SessionFresh {
		note := fmt.Sprintf("the inbound session %s was not resumed: %s; started a fresh conversation", id, plan.Reason)
		if r.refFree(ctx) {
			// The id is whatever the edge delivered: a tool's output,
			// a literal, another node's stamp.
			note = blobref.Hide(note)
		}
		return plan, note
	}
	return plan, ""
}

// delivered is the _session_id that the edge which made cur produced by
// its own mapping (ADR-089 rule 1).
func (r *runImpl) delivered(cur runstore.Cursor) string {
	if cur.Delivered != nil {
		return *cur.Delivered
	}
	// A cursor recorded before edges recorded it: the input's id was
	// delivered only if an edge from its source to it maps one (an edge
	// always overwrites the run's inputs with what it maps).
	for _, e := range r.g.EdgesFrom(cur.From) {
		if _, ok := e.With[agent.SessionIDKey]; ok && e.To == cur.Node {
			id, _ := cur.Input[agent.SessionIDKey].(string)
			return id
		}
	}
	return ""
}

// oneTrip runs the Visit activity: restore, execute, snapshot and pack on
// one worker. A visit whose worker vanished is started again by the server
// (runs recorded before server-retry: by this loop); one that failed in a
// way that may pass starts again here, with new blob keys, up to
// maxVisitRestarts times.
//
// Besides the result, it returns the blob keys that attempts other than
// the one that produced it were given (see unnamedKeys): no checkpoint
// names them, so they are garbage once the visit is committed.
func (r *runImpl) oneTrip(ctx workflow.Context, node *graph.Node, visitNo int, plan resolve.Plan, answer *agent.Answer, guidance []string, extra visitExtras, sc *scope) (*activities.VisitResult, []string, error) {
	log := workflow.GetLogger(ctx)
	actx, serverRetry := r.visitOptions(ctx, node, visitNo, plan, sc)
	incremental := node.Kind == graph.KindAgent && node.Session == graph.SessionPersist &&
		r.at(ctx, changeIncrementalPacks, versionIncrementalPacks)
	var lost []string
	var retryOf *agent.Interruption
	upgradeWaits := 0
	for restarts := 0; ; restarts++ {
		req := r.visitRequest(ctx, node, visitNo, plan, answer, guidance, sc)
		req.ServerRetry, req.Incremental, req.RetryOf = serverRetry, incremental, retryOf
		req.Limits, req.Continues = extra.limits, extra.continues
		var res activities.VisitResult
		visit := acts.Visit
		if req.BranchName != "" {
			visit = acts.VisitBranch
		}
		err := workflow.ExecuteActivity(actx, visit, req).Get(ctx, &res)
		if err == nil {
			if res.SessionNote != "" {
				log.Warn("session not resumed; the visit ran fresh", "node", node.ID, "visit", visitNo, "plan", plan.Kind.String(), "reason", res.SessionNote)
			}
			return &res, append(lost, unnamedKeys(req, &res)...), nil
		}
		lost = append(lost, unnamedKeys(req, nil)...)
		if req.BranchName != "" && isAppErrorType(err, activityNotRegistered) && upgradeWaits < maxUpgradeWaits {
			// Only workers of an older build polled the task: wait for
			// an upgraded one (a rolling upgrade), without counting it
			// as a failure of the visit.
			upgradeWaits++
			restarts--
			log.Warn("no worker that runs branch visits took this one; waiting for an upgraded worker", "node", node.ID, "visit", visitNo, "wait", upgradeWait.String())
			timer := workflow.NewTimerWithOptions(ctx, upgradeWait, workflow.TimerOptions{Summary: fmt.Sprintf("wait for a worker that runs VisitBranch (%s visit %d)", node.ID, visitNo)})
			if serr := timer.Get(ctx, nil); serr != nil {
				return nil, nil, serr
			}
			continue
		}
		again := mayPass(err)
		if serverRetry {
			again = isAppErrorType(err, activities.ErrTypeMayPass)
		}
		if restarts < maxVisitRestarts && again {
			log.Warn("visit failed in a way that may pass; starting it again", "node", node.ID, "visit", visitNo, "restart", restarts+1, "error", activities.ErrorText(err))
			if r.at(ctx, changeRetryNote, versionRetryNote) {
				retryOf = lostFacts(err, retryOf, r.refFree(ctx))
				actx = workflow.WithActivityOptions(actx, withSummary(workflow.GetActivityOptions(actx), " · again after an interrupted attempt"))
			}
			if !workerLost(err) {
				wait := time.Duration(1<<restarts) * time.Second
				timer := workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{Summary: fmt.Sprintf("retry %s visit %d in %s", node.ID, visitNo, wait)})
				if serr := timer.Get(ctx, nil); serr != nil {
					return nil, nil, serr
				}
			}
			continue
		}
		what := fmt.Sprintf("tool node %q (visit %d)", node.ID, visitNo)
		if node.Kind == graph.KindAgent {
			what = fmt.Sprintf("agent node %q (visit %d, backend %s)", node.ID, visitNo, plan.Backend)
		}
		// The activity's message may name the node itself: once is enough.
		inner := activities.ErrorText(err)
		for _, named := range []string{fmt.Sprintf("tool node %q: ", node.ID), fmt.Sprintf("node %q: ", node.ID)} {
			inner = strings.TrimPrefix(inner, named)
		}
		return nil, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: %s", what, inner), runapi.ErrTypeNodeFailed, err)
	}
}

// visitOptions are the Visit activity's options for one visit: its time,
// and who starts it again when its worker is lost (the server, since
// changeServerRetry, whose answer it also returns).
func (r *runImpl) visitOptions(ctx workflow.Context, node *graph.Node, visitNo int, plan resolve.Plan, sc *scope) (workflow.Context, bool) {
	timeout := time.Duration(node.Timeout)
	if timeout <= 0 {
		timeout = r.opts.NodeTimeout
		if node.Kind == graph.KindTool {
			timeout = defaultToolTimeout
		}
	}
	serverRetry := r.at(ctx, changeServerRetry, versionServerRetry)
	retry := &temporal.RetryPolicy{MaximumAttempts: 1}
	if serverRetry {
		// A lost worker's visit is started again by the server itself the
		// moment its heartbeat timeout passes (or its worker hands it
		// back): no workflow task, so no wait on the dead worker's sticky
		// queue. Nothing else is retried there: a visit past its own time
		// is final, and the activity makes every other failure final for
		// the server (ErrTypeMayPass) for the loop below to judge.
		retry = &temporal.RetryPolicy{
			InitialInterval:        lostWorkerRetryInterval,
			BackoffCoefficient:     1,
			MaximumAttempts:        1 + maxLostWorkerRetries,
			NonRetryableErrorTypes: []string{startToCloseTimeout},
		}
	}
	summary := visitSummary(node, visitNo, plan.Backend) + branchSuffix(sc)
	if node.Kind == graph.KindTool && r.refFree(ctx) {
		// A tool's summary quotes its command, text of the graph's.
		summary = blobref.Hide(summary)
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:   summary,
		TaskQueue: runapi.TaskQueue,
		// The node's own time, plus room to restore and snapshot.
		StartToCloseTimeout: timeout + visitOverhead,
		HeartbeatTimeout:    r.opts.HeartbeatTimeout,
		RetryPolicy:         retry,
	})
	return actx, serverRetry
}

// visitRequest is the Visit activity's request for one attempt: fresh blob
// keys each time, and the session plan of an agent visit.
func (r *runImpl) visitRequest(ctx workflow.Context, node *graph.Node, visitNo int, plan resolve.Plan, answer *agent.Answer, guidance []string, sc *scope) *activities.VisitRequest {
	req := &activities.VisitRequest{
		RunID: r.cp.RunID, NodeID: node.ID, Visit: visitNo, Node: *node, Backend: plan.Backend,
		Input: plan.Input, PrevOutput: r.cp.Outputs[node.ID], Answer: answer,
		Workspace: r.workspaceOf(sc), Started: workflow.Now(ctx), Branch: sc.branch, BranchName: sc.name, Fork: plan.Fork,
		Guidance: guidance,
	}
	if node.Mentions(".workspace.branches") {
		req.Joined = r.latestJoined()
	}
	if node.Kind == graph.KindAgent {
		req.PauseTo = runstore.PauseKey(r.cp.RunID, node.ID, r.mintID(ctx))
		if node.Session == graph.SessionPersist {
			req.PackTo = runstore.SessionKey(r.cp.RunID, node.ID, r.mintID(ctx))
		}
		if plan.Kind != resolve.Fresh {
			req.Session = &activities.SessionPlan{
				Kind: plan.Kind.String(), SessionID: plan.SessionID, Fingerprint: plan.Fingerprint,
				Digest: plan.Digest, Stripped: plan.Stripped,
			}
			if plan.Kind != resolve.HasSession {
				req.Session.StateRef, req.Session.Size, req.Session.Parts = plan.StateRef, plan.Size, plan.Parts
				if len(plan.Parts) > 0 {
					// A worker built before slots had parts would restore the
					// base alone: its digest check refuses this one instead.
					req.Session.Digest = activities.PartsDigestPrefix + plan.Digest
				}
			}
		}
	}
	return req
}

// unnamedKeys are the blob keys of req that no checkpoint will name once
// res is committed: with res nil (the attempt failed), every key any of
// its attempts was given; else the keys of the attempts before res's, and
// res's own when its pack failed (a pack can land and still report an
// error). A visit that succeeded at once has none, so the common visit
// deletes nothing more.
func unnamedKeys(req *activities.VisitRequest, res *activities.VisitResult) []string {
	attempts := int32(1)
	if req.ServerRetry {
		attempts = 1 + maxLostWorkerRetries
	}
	if res != nil {
		attempts = max(res.Attempt, 1) - 1
		if !res.Packed && res.PackError != "" {
			attempts++
		}
	}
	var out []string
	for _, key := range []string{req.PackTo, req.PauseTo} {
		if key == "" {
			continue
		}
		for a := int32(1); a <= attempts; a++ {
			if k := runstore.AttemptKey(key, a); res == nil || !res.Packed || k != res.PackedTo {
				out = append(out, k)
			}
		}
	}
	return out
}

// mayPass reports a failed visit worth starting again: its worker vanished,
// or it failed with an error the activity did not mark final.
func mayPass(err error) bool {
	if workerLost(err) {
		return true
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return !appErr.NonRetryable()
	}
	var te *temporal.TimeoutError
	return !errors.As(err, &te) && !temporal.IsCanceledError(err)
}

// takeWorkspace records the snapshot a visit left: the trunk's, or its
// branch's head.
func (r *runImpl) takeWorkspace(res *activities.VisitResult, sc *scope) {
	switch {
	case res.Workspace == nil:
	case sc.name != "":
		sc.ws = res.Workspace
	case !sc.branch:
		r.cp.Workspace = res.Workspace
	}
}

// pauseOnQuestion is the pause-ref lifecycle of an in-node ask_user: the
// packed session becomes the pause ref; the pause checkpoint is written; a
// previous pause blob is deleted only after that checkpoint succeeded
// (never on its error: it may have landed). Then it waits for the answer.
func (r *runImpl) pauseOnQuestion(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, visitNo int, res *activities.VisitResult, sc *scope) (*agent.Answer, error) {
	log := workflow.GetLogger(ctx)
	old := r.pauseOf(sc)
	p := &runstore.PauseInfo{
		NodeID: node.ID, Visit: visitNo, Backend: res.Backend, SessionID: res.SessionID,
		Fingerprint: res.Fingerprint, PendingToolUseID: res.PendingToolUseID, Input: cur.Input,
	}
	// Ids count across every ask_user of the visit, so a second question
	// is never mistaken for the answered first.
	asked := 0
	if old != nil && old.NodeID == node.ID {
		asked = len(old.Questions)
	}
	for _, q := range res.Questions {
		asked++
		p.Questions = append(p.Questions, runstore.Question{ID: fmt.Sprintf("%s-%d-q%d", node.ID, visitNo, asked), AgentID: q.ID, Text: q.Text})
	}
	if res.Packed {
		p.BackendSessionStateRef, p.BackendSessionDigest = res.PackedTo, res.PackDigest
	} else {
		// A failed Put never blocks the question: the answer will then
		// run in a fresh conversation.
		log.Warn("could not store the in-flight session for this question; the answer will start a fresh conversation", "node", node.ID, "error", res.PackError)
	}
	r.setPause(sc, p)
	if !sc.branch {
		r.postQuestions(ctx, node.ID, p.Questions)
		r.cp.Status = runstore.StatusWaiting
		r.setStatus(ctx, r.cp.Status)
		if err := r.save(ctx); err != nil {
			// The checkpoint may or may not have landed: keep every blob,
			// never read back, never delete (ADR-089).
			log.Warn("pause checkpoint failed; keeping all session blobs and waiting anyway", "node", node.ID, "error", err.Error())
		} else if old != nil && old.BackendSessionStateRef != "" && old.BackendSessionStateRef != p.BackendSessionStateRef {
			r.deleteBlobs(ctx, []string{old.BackendSessionStateRef})
		}
	}
	return r.awaitAgentAnswer(ctx, node, p)
}

// commit is the in-memory half of ADR-089's slot commit: the pause ends,
// and a persist node's slot becomes the session just packed (or, when the
// pack failed, no slot: never the old one). The superseded blobs are
// deleted by run after the required checkpoint.
func (r *runImpl) commit(ctx workflow.Context, node *graph.Node, res *activities.VisitResult, sc *scope) visitResult {
	v := visitResult{output: res.Output}
	if p := r.pauseOf(sc); p != nil && p.NodeID == node.ID {
		if p.BackendSessionStateRef != "" {
			v.deleteAfterCommit = append(v.deleteAfterCommit, p.BackendSessionStateRef)
		}
		r.setPause(sc, nil)
		if !sc.branch {
			r.cp.Status = runstore.StatusRunning
			r.setStatus(ctx, r.cp.Status)
		}
	}
	if node.Session != graph.SessionPersist {
		return v
	}
	prev := r.cp.NodeSessions[node.ID]
	if !res.Packed {
		// Invalidate; never keep or restore the old slot. Its blob stays
		// for `tether delete`.
		delete(r.cp.NodeSessions, node.ID)
		workflow.GetLogger(ctx).Warn("could not store the persist session; the next visit starts fresh", "node", node.ID, "error", res.PackError)
		return visitResult{output: res.Output}
	}
	slot := runstore.NodeSessionSlot{
		Backend: res.Backend, SessionID: res.SessionID, Fingerprint: res.Fingerprint,
		StateRef: res.PackedTo, Digest: res.PackDigest, Size: res.PackSize,
	}
	if res.PackDeltaOf != "" {
		// An incremental pack: what the visit added to the slot it resumed.
		// Every blob of that slot stays in use, and nothing is superseded.
		if prev.StateRef == "" || prev.SessionID != res.SessionID || prev.Backend != res.Backend || prev.LastDigest() != res.PackDeltaOf {
			delete(r.cp.NodeSessions, node.ID)
			workflow.GetLogger(ctx).Warn("the visit's incremental pack does not follow the node's slot; the next visit starts fresh", "node", node.ID, "extends", res.PackDeltaOf, "slot", prev.LastDigest())
			return v
		}
		slot.StateRef, slot.Digest, slot.Size = prev.StateRef, prev.Digest, prev.Size
		slot.Parts = append(slices.Clone(prev.Parts), runstore.SessionPart{Ref: res.PackedTo, Digest: res.PackDigest, Size: res.PackSize})
		r.cp.NodeSessions[node.ID] = slot
		return v
	}
	r.cp.NodeSessions[node.ID] = slot
	if prev.StateRef != "" && prev.StateRef != res.PackedTo {
		v.deleteAfterCommit = append(v.deleteAfterCommit, r.retain(node.ID, prev)...)
	}
	return v
}

// retain keeps a superseded slot, its base blob and its parts, for rewinds
// and returns the blobs that fall out of the window, to delete after the
// required checkpoint. The window holds SessionHistory blobs: the oldest
// slots go first, each with all its parts, but the newest superseded slot
// is kept whole even when it alone has more. (A slot without parts is one
// blob, so a run without incremental packs keeps its last SessionHistory
// slots, as before there were parts.)
func (r *runImpl) retain(node string, slot runstore.NodeSessionSlot) []string {
	keep := max(r.opts.SessionHistory, 0)
	if keep == 0 {
		return slot.Refs()
	}
	if r.cp.RetainedSessions == nil {
		r.cp.RetainedSessions = map[string][]string{}
	}
	parts := r.cp.RetainedParts[node]
	if len(slot.Parts) > 0 {
		if parts == nil {
			parts = map[string][]string{}
		}
		parts[slot.StateRef] = slot.Refs()[1:]
	}
	bases := append(r.cp.RetainedSessions[node], slot.StateRef)
	count := 0
	for _, b := range bases {
		count += 1 + len(parts[b])
	}
	var drop []string
	over := 0
	for count > keep && over < len(bases)-1 {
		b := bases[over]
		drop = append(drop, b)
		drop = append(drop, parts[b]...)
		count -= 1 + len(parts[b])
		delete(parts, b)
		over++
	}
	if over > 0 {
		bases = slices.Clone(bases[over:])
	}
	r.cp.RetainedSessions[node] = bases
	switch {
	case len(parts) > 0:
		if r.cp.RetainedParts == nil {
			r.cp.RetainedParts = map[string]map[string][]string{}
		}
		r.cp.RetainedParts[node] = parts
	case r.cp.RetainedParts != nil:
		delete(r.cp.RetainedParts, node)
		if len(r.cp.RetainedParts) == 0 {
			r.cp.RetainedParts = nil
		}
	}
	return drop
}

// awaitAgentAnswer waits for every question of an agent's pause and folds
// the answers into one reply for the resumed conversation.
func (r *runImpl) awaitAgentAnswer(ctx workflow.Context, node *graph.Node, p *runstore.PauseInfo) (*agent.Answer, error) {
	answers, err := r.ask(ctx, node.ID, p.Questions)
	if err != nil {
		return nil, err
	}
	text := answers[0]
	if len(answers) > 1 {
		var b strings.Builder
		for i, q := range p.Questions {
			b.WriteString(q.Text + ": " + answers[i] + "\n")
		}
		text = b.String()
	}
	for i := range p.Questions {
		p.Questions[i].Answered = true
		p.Questions[i].Answer = answers[i]
	}
	return &agent.Answer{QuestionID: p.Questions[0].AgentID, Text: text, PendingToolUseID: p.PendingToolUseID}, nil
}

// effectiveBackend is the backend this visit plans for: the node's own, or
// the fallback its last visit actually ran on.
func (r *runImpl) effectiveBackend(node *graph.Node) string {
	if len(node.Fallback) == 0 {
		return node.Backend
	}
	if last, _ := r.cp.Outputs[node.ID][agent.BackendKey].(string); last != "" && slices.Contains(node.Fallback, last) {
		return last
	}
	return node.Backend
}

// workerLost reports a visit whose worker vanished: its task was never
// picked up, its heartbeats stopped, or it shut down mid-visit.
func workerLost(err error) bool {
	if isAppErrorType(err, activities.ErrTypeWorkerStopping) {
		return true
	}
	var te *temporal.TimeoutError
	if !errors.As(err, &te) {
		return false
	}
	switch te.TimeoutType() {
	case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, enumspb.TIMEOUT_TYPE_HEARTBEAT:
		return true
	}
	return false
}

func isAppErrorType(err error, typ string) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == typ
}

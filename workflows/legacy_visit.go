package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/resolve"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// This file keeps the agent and tool visits of runs recorded before
// changeOneTripVisit: a RestoreSession activity on any worker, then
// ExecuteNode on that worker's own queue, restarted from the restore when
// the worker vanished; tools on the worker of the last agent visit. Their
// histories (testdata/histories) replay through it. New runs use agent.go.

// legacyVisitAgent runs one visit of an agent node: resolve the session, restore
// it on a worker, execute there, and on an in-node ask_user pause on a pause
// ref until answered. ADR-089's slot commit is split between here (the new
// slot goes into memory) and run (the required checkpoint, then deletes).
func (r *runImpl) legacyVisitAgent(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, visitNo int, inBranch bool) (visitResult, error) {
	log := workflow.GetLogger(ctx)
	eff := r.effectiveBackend(node)
	sc := &scope{branch: inBranch}

	var answer *agent.Answer
	answering := false
	asked := 0
	// A run restored from a checkpoint taken while this node waited on an
	// ask_user waits for that answer again instead of re-executing.
	if p := r.pauseOf(sc); p != nil && p.NodeID == node.ID && p.Backend != "" {
		asked = len(p.Questions)
		a, err := r.awaitAgentAnswer(ctx, node, p)
		if err != nil {
			return visitResult{}, err
		}
		answer, answering = a, true
	}

	for restarts := 0; ; {
		plan, _ := r.resolve(ctx, node, cur, answering, sc)
		sessionID, queue, input, err := r.legacyRestore(ctx, node, plan)
		if err != nil {
			return visitResult{}, err
		}
		req := &activities.ExecuteRequest{
			RunID: r.cp.RunID, NodeID: node.ID, Visit: visitNo, Node: *node, Backend: eff,
			Input: input, PrevOutput: r.cp.Outputs[node.ID], SessionID: sessionID, Answer: answer,
			PauseTo: runstore.PauseKey(r.cp.RunID, node.ID, r.mintID(ctx)),
		}
		if node.Session == graph.SessionPersist {
			req.PackTo = runstore.SessionKey(r.cp.RunID, node.ID, r.mintID(ctx))
		}
		res, err := r.legacyExecute(ctx, queue, req)
		if err != nil {
			if workerLost(err) && restarts < maxVisitRestarts {
				restarts++
				log.Warn("the worker holding this visit's session is gone; restarting the visit on another worker", "node", node.ID, "visit", visitNo, "restart", restarts, "error", err.Error())
				continue
			}
			return visitResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent node %q (visit %d, backend %s): %s", node.ID, visitNo, eff, activities.ErrorText(err)), runapi.ErrTypeNodeFailed, err)
		}

		if len(res.Questions) > 0 {
			a, err := r.legacyPause(ctx, node, cur, visitNo, inBranch, sc, &asked, req, res)
			if err != nil {
				return visitResult{}, err
			}
			answer, answering, restarts = a, true, 0
			continue
		}
		return r.legacyCommit(ctx, node, inBranch, sc, req, res), nil
	}
}

// legacyPause records the questions an execution asked, saves the pause
// (on the trunk) and waits for their answer. asked counts the questions of
// the whole visit, so that ids never repeat.
func (r *runImpl) legacyPause(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, visitNo int, inBranch bool, sc *scope, asked *int, req *activities.ExecuteRequest, res *activities.ExecuteResult) (*agent.Answer, error) {
	log := workflow.GetLogger(ctx)
	p := &runstore.PauseInfo{
		NodeID: node.ID, Visit: visitNo, Backend: res.Backend, SessionID: res.SessionID,
		Fingerprint: res.Fingerprint, PendingToolUseID: res.PendingToolUseID, Input: cur.Input,
	}
	for _, q := range res.Questions {
		// Ids count across every ask_user of the visit, so a second
		// question is never mistaken for the answered first.
		*asked++
		p.Questions = append(p.Questions, runstore.Question{ID: fmt.Sprintf("%s-%d-q%d", node.ID, visitNo, *asked), AgentID: q.ID, Text: q.Text})
	}
	if res.Packed {
		p.BackendSessionStateRef, p.BackendSessionDigest = req.PauseTo, res.PackDigest
	} else {
		// A failed Put never blocks the question: the answer will
		// then run in a fresh conversation.
		log.Warn("could not store the in-flight session for this question; the answer will start a fresh conversation", "node", node.ID, "error", res.PackError)
	}
	old := r.pauseOf(sc)
	r.setPause(sc, p)
	if !inBranch {
		r.cp.Status = runstore.StatusWaiting
		if err := r.save(ctx); err != nil {
			// The checkpoint may or may not have landed: keep every
			// blob, never read back, never delete (ADR-089).
			log.Warn("pause checkpoint failed; keeping all session blobs and waiting anyway", "node", node.ID, "error", err.Error())
		} else if old != nil && old.BackendSessionStateRef != "" && old.BackendSessionStateRef != p.BackendSessionStateRef {
			r.deleteBlobs(ctx, []string{old.BackendSessionStateRef})
		}
	}
	a, err := r.awaitAgentAnswer(ctx, node, p)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// legacyCommit takes a finished execution into the run: its output, the
// pause it answered, and the persist node's new slot (ADR-089's slot
// commit, whose checkpoint run takes).
func (r *runImpl) legacyCommit(ctx workflow.Context, node *graph.Node, inBranch bool, sc *scope, req *activities.ExecuteRequest, res *activities.ExecuteResult) visitResult {
	log := workflow.GetLogger(ctx)
	v := visitResult{output: res.Output}
	if !inBranch {
		r.lastQueue = res.Queue
	}
	if p := r.pauseOf(sc); p != nil && p.NodeID == node.ID {
		if p.BackendSessionStateRef != "" {
			v.deleteAfterCommit = append(v.deleteAfterCommit, p.BackendSessionStateRef)
		}
		r.setPause(sc, nil)
		if !inBranch {
			r.cp.Status = runstore.StatusRunning
		}
	}
	if node.Session == graph.SessionPersist {
		prev := r.cp.NodeSessions[node.ID]
		if res.Packed {
			r.cp.NodeSessions[node.ID] = runstore.NodeSessionSlot{
				Backend: res.Backend, SessionID: res.SessionID, Fingerprint: res.Fingerprint, StateRef: req.PackTo,
				Digest: res.PackDigest,
			}
			if prev.StateRef != "" && prev.StateRef != req.PackTo {
				v.deleteAfterCommit = append(v.deleteAfterCommit, prev.StateRef)
			}
		} else {
			// Invalidate; never keep or restore the old slot. Its blob
			// stays for `tether delete`.
			delete(r.cp.NodeSessions, node.ID)
			v.deleteAfterCommit = nil
			log.Warn("could not store the persist session; the next visit starts fresh", "node", node.ID, "error", res.PackError)
		}
	}
	return v
}

// legacyRestore carries out a plan's restore step on some worker and returns the
// session to resume and the queue of the worker where it is now live. A
// missing, corrupt or foreign blob, or a has-session that answers no,
// strips the session keys and runs fresh; a storage fault is not absence
// and fails the visit instead.
func (r *runImpl) legacyRestore(ctx workflow.Context, node *graph.Node, plan resolve.Plan) (sessionID, queue string, input map[string]any, err error) {
	log := workflow.GetLogger(ctx)
	if plan.Kind == resolve.Fresh {
		return "", runapi.TaskQueue, plan.Input, nil
	}
	req := &activities.RestoreRequest{RunID: r.cp.RunID, Node: *node, Backend: plan.Backend, SessionID: plan.SessionID}
	if plan.Kind != resolve.HasSession {
		req.StateRef, req.Digest = plan.StateRef, plan.Digest
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           runapi.TaskQueue,
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    r.opts.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{activities.ErrTypeSessionUnavailable, activities.ErrTypeBadRequest},
		},
	})
	var res activities.RestoreResult
	if err := workflow.ExecuteActivity(actx, acts.RestoreSession, req).Get(ctx, &res); err != nil {
		if isAppErrorType(err, activities.ErrTypeSessionUnavailable) {
			log.Warn("session could not be restored; stripping session keys and running fresh", "node", node.ID, "plan", plan.Kind.String(), "reason", plan.Reason, "error", err.Error())
			return "", runapi.TaskQueue, plan.Stripped, nil
		}
		return "", "", nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("agent node %q: restoring its session failed with a storage fault (not absence): %v; fix the blob store, then `tether resume %s`", node.ID, err, r.cp.RunID),
			runapi.ErrTypeNodeFailed, err)
	}
	if !res.Present {
		log.Warn("session is not present on the worker; stripping session keys and running fresh", "node", node.ID, "plan", plan.Kind.String(), "reason", plan.Reason)
		return "", runapi.TaskQueue, plan.Stripped, nil
	}
	return plan.SessionID, res.Queue, plan.Input, nil
}

// legacyExecute runs the visit's ExecuteNode activity. On a worker's own queue it
// is never retried by Temporal: a lost worker means the visit restarts from
// its restore step on another worker.
func (r *runImpl) legacyExecute(ctx workflow.Context, queue string, req *activities.ExecuteRequest) (*activities.ExecuteResult, error) {
	opts := workflow.ActivityOptions{
		TaskQueue:           queue,
		StartToCloseTimeout: r.opts.NodeTimeout,
		HeartbeatTimeout:    r.opts.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumAttempts: 3,
			NonRetryableErrorTypes: []string{
				"NoSession", "NotInstalled", "ExitError", "Timeout", "ScriptedFailure",
				activities.ErrTypeBadRequest,
			},
		},
	}
	if queue != runapi.TaskQueue {
		opts.ScheduleToStartTimeout = r.opts.WorkerLostAfter
		opts.RetryPolicy.MaximumAttempts = 1
	}
	var res activities.ExecuteResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), acts.ExecuteNode, req).Get(ctx, &res)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// legacyVisitTool runs the node's argv in runs recorded before
// changeOneTripVisit. Since versionToolAffinity it runs on the worker that
// ran the run's last agent visit, whose working directory holds what that
// agent wrote (a tool oracle checks the writer's files), and only if that
// worker is gone on any worker.
func (r *runImpl) legacyVisitTool(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, visitNo int, inBranch bool) (visitResult, error) {
	timeout := time.Duration(node.Timeout)
	if timeout <= 0 {
		timeout = defaultToolTimeout
	}
	opts := workflow.ActivityOptions{
		TaskQueue:           runapi.TaskQueue,
		StartToCloseTimeout: timeout + time.Minute,
		HeartbeatTimeout:    r.opts.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{activities.ErrTypeBadRequest},
		},
	}
	req := &activities.ToolRequest{RunID: r.cp.RunID, NodeID: node.ID, Visit: visitNo, Node: *node, Input: cur.Input}
	var out map[string]any
	affinity := workflow.GetVersion(ctx, changeToolAffinity, workflow.DefaultVersion, versionToolAffinity)
	if affinity == versionToolAffinity && r.lastQueue != "" && !inBranch {
		own := opts
		own.TaskQueue = r.lastQueue
		own.ScheduleToStartTimeout = r.opts.WorkerLostAfter
		own.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, own), acts.RunTool, req).Get(ctx, &out)
		if err == nil {
			return visitResult{output: out}, nil
		}
		if !workerLost(err) {
			return visitResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool node %q: %s", node.ID, activities.ErrorText(err)), runapi.ErrTypeNodeFailed, err)
		}
		workflow.GetLogger(ctx).Warn("the worker of the last agent visit is gone; running the tool on any worker, without that agent's files", "node", node.ID)
		r.lastQueue = ""
	}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), acts.RunTool, req).Get(ctx, &out); err != nil {
		return visitResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool node %q: %s", node.ID, activities.ErrorText(err)), runapi.ErrTypeNodeFailed, err)
	}
	return visitResult{output: out}, nil
}

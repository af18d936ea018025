package activities

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blobref"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/resolve"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/workspace"
)

// VisitRequest is one visit of an agent or tool node, carried out by one
// activity on one worker: restore the workspace and the session, run,
// snapshot the workspace and pack the session, put both in the store.
type VisitRequest struct {
	RunID  string     `json:"run_id"`
	NodeID string     `json:"node_id"`
	Visit  int        `json:"visit"`
	Node   graph.Node `json:"node"`
	// Backend is the effective backend of an agent visit.
	Backend string `json:"backend,omitempty"`
	// Input is the visit's input with the session keys the plan set.
	Input      map[string]any `json:"input,omitempty"`
	PrevOutput map[string]any `json:"prev_output,omitempty"`
	// Session is the plan's restore step; nil runs fresh.
	Session *SessionPlan  `json:"session,omitempty"`
	Answer  *agent.Answer `json:"answer,omitempty"`
	// PackTo and PauseTo are the blob keys the session is packed into
	// after a finished persist visit, and after an ask_user.
	PackTo  string `json:"pack_to,omitempty"`
	PauseTo string `json:"pause_to,omitempty"`
	// Workspace is the snapshot the visit runs on. Nil adopts whatever the
	// worker's directory holds (a run begun before workspaces existed).
	Workspace *runstore.WorkspaceState `json:"workspace,omitempty"`
	// Started is the visit's start on the workflow's clock, the time of
	// its snapshot commit.
	Started time.Time `json:"started"`
	// Branch marks a visit inside a fan-out branch. With BranchName, it
	// runs in the branch's own directory and commits on the branch's line
	// (Workspace is the branch's head); without (a run recorded before
	// branch workspaces), it runs on a private copy of the workspace and
	// its changes are not kept.
	Branch     bool   `json:"branch,omitempty"`
	BranchName string `json:"branch_name,omitempty"`
	// Joined are the branches of the run's latest join, for a prompt that
	// uses .workspace.branches.
	Joined []runstore.BranchState `json:"joined,omitempty"`
	// Fork continues a copy of the restored conversation under a new id.
	Fork bool `json:"fork,omitempty"`
	// Incremental lets a persist visit that resumed its own slot pack only
	// what it added to the session, as a part after the slot's (see
	// ExecuteResult.PackDeltaOf).
	Incremental bool `json:"incremental,omitempty"`
	// ServerRetry marks a visit that the Temporal server starts again by
	// itself when its worker is lost (a heartbeat timeout, or
	// WorkerStopping), with no workflow task in between. Attempt n packs
	// to runstore.AttemptKey(PackTo, n), so a lost attempt still running
	// somewhere never writes over the blob its successor names; a failure
	// that may pass is returned as ErrTypeMayPass, so that the workflow,
	// not the server, decides whether to start the visit again.
	ServerRetry bool `json:"server_retry,omitempty"`
	// RetryOf is what the earlier activities of this visit did, when the
	// workflow started it again after they were lost or failed in a way
	// that may pass (see retry.go); nil on a first start.
	RetryOf *agent.Interruption `json:"retry_of,omitempty"`
	// Guidance are notes people sent the node (the guide signal): an
	// agent visit adds them after its prompt (GuidanceIntro).
	Guidance []string `json:"guidance,omitempty"`
	// Limits are the budgets an agent visit counts against: the worker's
	// model relay refuses the visit's next model call once one is spent,
	// and the visit ends there (ExecuteResult.BudgetStop).
	Limits []agent.Limit `json:"limits,omitempty"`
	// Continues, when set, is why an earlier attempt at this visit
	// stopped mid-turn (a spent budget): an agent that resumes its own
	// conversation is told to carry on (BudgetContinue) instead of being
	// given its prompt again; one that starts afresh gets the prompt with
	// that note in front.
	Continues string `json:"continues,omitempty"`
}

// SessionPlan is what session resolution decided to restore.
type SessionPlan struct {
	// Kind is the resolve.Kind's name: the visit compares the
	// fingerprint only for a slot or a pause plan, and notes a slot that
	// could not be restored.
	Kind      string `json:"kind"`
	SessionID string `json:"session_id"`
	// Fingerprint is the conversation's recorded fingerprint.
	Fingerprint string `json:"fingerprint,omitempty"`
	// StateRef is the blob to unpack; empty means only check that the
	// session is present in this worker's live root.
	StateRef string `json:"state_ref,omitempty"`
	// Digest is the blob's recorded sha256; a blob that differs is
	// refused. For a slot with Parts it is PartsDigestPrefix followed by
	// the base's digest (see baseDigest).
	Digest string `json:"digest,omitempty"`
	// Size is the blob's size, when recorded.
	Size int64 `json:"size,omitempty"`
	// Parts are the incremental packs to apply after StateRef, in order.
	Parts []runstore.SessionPart `json:"parts,omitempty"`
	// Stripped is the input to run with when the session cannot be
	// restored: without session keys.
	Stripped map[string]any `json:"stripped,omitempty"`
}

// VisitResult is what a visit produced.
type VisitResult struct {
	ExecuteResult
	// SessionNote says why a planned session was not resumed; the visit
	// then ran fresh.
	SessionNote string `json:"session_note,omitempty"`
	// Workspace is the new snapshot; nil when the visit changed nothing.
	Workspace *runstore.WorkspaceState `json:"workspace,omitempty"`
	// WorkspaceNotes say what the snapshot left out and why.
	WorkspaceNotes []string `json:"workspace_notes,omitempty"`
	// WorkspaceHit reports a restore skipped because this worker held the
	// snapshot; Fetched and Uploaded count pack bytes moved.
	WorkspaceHit      bool  `json:"workspace_hit,omitempty"`
	WorkspaceFetched  int64 `json:"workspace_fetched,omitempty"`
	WorkspaceUploaded int64 `json:"workspace_uploaded,omitempty"`
	// Attempt is the server's attempt that produced this result, when the
	// server retries lost workers (attempt n packed to
	// runstore.AttemptKey(key, n)); 0 otherwise.
	Attempt int32 `json:"attempt,omitempty"`
}

// SessionNoteKey is the output key that says why a visit planned to resume
// a conversation ran fresh instead.
const SessionNoteKey = "_session_note"

// Visit carries out one visit of an agent or tool node.
func (a *Activities) Visit(ctx context.Context, req *VisitRequest) (res *VisitResult, err error) {
	if req == nil || (req.Node.Kind != graph.KindAgent && req.Node.Kind != graph.KindTool) {
		return nil, temporal.NewNonRetryableApplicationError("Visit needs an agent or tool node", ErrTypeBadRequest, nil)
	}
	// What earlier attempts did before they were lost rides on this
	// one's heartbeats from the first, and a failure that may pass carries
	// what this one did (see retry.go).
	key := progressKey(ctx)
	lost := lostAttempts(ctx, req)
	visitProgress.carry(key, lost)
	var last []any
	defer func() { err = withProgress(err, last) }()
	if req.ServerRetry {
		attempt := activity.GetInfo(ctx).Attempt
		own := *req
		own.PackTo, own.PauseTo = runstore.AttemptKey(req.PackTo, attempt), runstore.AttemptKey(req.PauseTo, attempt)
		req = &own
		defer func() { err = onlyLostWorkersRetry(err) }()
	}
	// Before the line above turns a failure final for the server: a visit
	// that failed on this worker's broken store goes to another worker.
	defer func() { res, err = a.storeFault(ctx, res, err) }()
	started := time.Now()
	a.inflight.add(req.RunID, 1)
	defer a.inflight.add(req.RunID, -1)
	ctx, end := telemetry.StartVisit(ctx, telemetry.VisitAttrs{
		Run: req.RunID, Node: req.NodeID, Visit: req.Visit, Kind: string(req.Node.Kind),
		Backend: req.Backend, Session: req.Node.Session, SessionID: sessionOf(req),
	})
	defer func() {
		end(err)
		outcome, backendName := telemetry.OutcomeFailed, req.Backend
		if err == nil {
			outcome, backendName = telemetry.OutcomeOK, res.Backend
			if len(res.Questions) > 0 {
				outcome = telemetry.OutcomeAsked
			}
			telemetry.SetVisitSession(ctx, res.SessionID)
		}
		a.Metrics.Visit(backendName, string(req.Node.Kind), outcome, time.Since(started))
	}()
	stop := a.heartbeat(ctx)
	defer func() {
		last = visitProgress.details(key)
		stop()
	}()
	root, base, cwd, err := a.visitDirs(req)
	if err != nil {
		return nil, err
	}
	res = &VisitResult{}
	if req.ServerRetry {
		res.Attempt = activity.GetInfo(ctx).Attempt
	}
	var ws *workspace.Workspace
	if root != "" && a.Workspaces != nil {
		if ws, err = a.Workspaces.Open(ctx, req.RunID, root); err != nil {
			return nil, err
		}
		defer ws.Close()
		endPhase := telemetry.StartPhase(ctx, telemetry.PhaseRestoreWorkspace)
		err := a.restoreWorkspace(ctx, req, ws, res)
		endPhase()
		if err != nil {
			return nil, err
		}
	}
	// The node's directory exists even where the snapshot has none (a
	// snapshot keeps no empty directories), made after the restore and
	// without following a link the restored files hold.
	if err := a.makeWorkdir(req.NodeID, base, cwd); err != nil {
		return nil, err
	}

	asked, err := a.runVisit(ctx, req, cwd, ws, lost, res)
	if err != nil {
		return nil, err
	}

	if ws != nil && (!req.Branch || req.BranchName != "") {
		endPhase := telemetry.StartPhase(ctx, telemetry.PhaseSnapshot)
		err := a.snapshotVisit(ctx, req, ws, asked, res)
		endPhase()
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// runVisit runs the node's agent or tool, confined, and says whether the
// agent asked the user.
func (a *Activities) runVisit(ctx context.Context, req *VisitRequest, cwd string, ws *workspace.Workspace, lost *agent.Interruption, res *VisitResult) (asked bool, err error) {
	runCtx, confined, err := a.confineVisit(ctx, req.Node)
	if err != nil {
		return false, err
	}
	switch req.Node.Kind {
	case graph.KindTool:
		endPhase := telemetry.StartPhase(ctx, telemetry.PhaseRun)
		out, err := a.runTool(runCtx, req.Node, req.Visit, req.Input, promptWorkspace(ctx, ws, req), cwd, lost)
		endPhase()
		if err != nil {
			return false, err
		}
		if lost != nil {
			out[agent.RetryNoteKey] = lost.ToolNote()
		}
		res.Output = out
	case graph.KindAgent:
		if err := a.visitAgent(runCtx, req, cwd, promptWorkspace(ctx, ws, req), lost, res); err != nil {
			return false, err
		}
		asked = len(res.Questions) > 0
	}
	noteRefused(res.Output, confined)
	return asked, nil
}

// onlyLostWorkersRetry leaves the server only the retries of a lost
// worker: a WorkerStopping hand-back and a cancellation stay as they are
// (a heartbeat timeout never reaches the activity), and every other error
// that is not already final becomes ErrTypeMayPass, final for the server.
func onlyLostWorkersRetry(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || temporal.IsCanceledError(err) {
		return err
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && (appErr.NonRetryable() || appErr.Type() == ErrTypeWorkerStopping) {
		return err
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeMayPass, err)
}

// visitAgent restores the planned session (or strips it), runs the agent
// and packs its session.
func (a *Activities) visitAgent(ctx context.Context, req *VisitRequest, cwd string, wsData map[string]any, lost *agent.Interruption, res *VisitResult) error {
	b, sessionID, err := a.pickBackend(req.Backend, req.Node, sessionOf(req))
	if err != nil {
		return err
	}
	env, err := a.agentEnv(b.Name(), req.RunID, cwd)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
	}
	input := req.Input
	var extend *extension
	if req.Session != nil {
		stripped := req.Session.Stripped
		if stripped == nil {
			stripped = map[string]any{}
		}
		changed := a.settingsChanged(b, env, req)
		switch {
		case sessionID == "":
			res.SessionNote = fmt.Sprintf("ran on fallback backend %s, which cannot continue a %s conversation; started a fresh one", b.Name(), req.Backend)
			input = stripped
		case changed != "":
			res.SessionNote, sessionID, input = changed, "", stripped
		default:
			endPhase := telemetry.StartPhase(ctx, telemetry.PhaseRestoreSession)
			note, x, err := a.restoreSession(ctx, b, env, req)
			endPhase()
			if err != nil {
				return err
			}
			if note != "" {
				res.SessionNote, sessionID, input = note, "", stripped
			}
			if req.Session.Kind == resolve.UnpackOwnSlot.String() && note == "" {
				extend = x // only the node's own slot takes its parts
			}
		}
		if res.SessionNote != "" {
			res.SessionNote = blobref.Hide(res.SessionNote)
			a.logger().Warn("session not resumed; the visit runs fresh", "run", req.RunID, "node", req.NodeID, "plan", req.Session.Kind, "reason", res.SessionNote)
		}
	}
	run := agentRun{
		runID: req.RunID, nodeID: req.NodeID, visit: req.Visit, node: req.Node, b: b, env: env,
		input: input, prev: req.PrevOutput, sessionID: sessionID, fork: req.Fork && sessionID != "",
		packTo: req.PackTo, pauseTo: req.PauseTo, workspace: wsData,
		incremental: req.Incremental, extend: extend, lost: lost, guidance: req.Guidance,
		limits: req.Limits, continues: req.Continues,
	}
	if req.Answer != nil {
		if sessionID != "" {
			run.answer = req.Answer
		} else {
			run.lostAnswer = req.Answer.Text
		}
	}
	er, err := a.runAgent(ctx, run)
	if err != nil {
		return err
	}
	res.ExecuteResult = *er
	if res.SessionNote != "" {
		res.Output[SessionNoteKey] = res.SessionNote
	}
	return nil
}

// agentEnv is a backend's live root for one run on this worker and the
// directory the agent works in (made already, see makeWorkdir). Each run has roots of its own, so that a
// confined agent, which may write its root, sees no other run's sessions.
func (a *Activities) agentEnv(backendName, runID, cwd string) (agent.Env, error) {
	env := agent.Env{StateRoot: filepath.Join(a.StateDir, "runs", runID, backendName), Workdir: cwd}
	if err := mkdirAll(env.StateRoot); err != nil {
		return agent.Env{}, err
	}
	return env, nil
}

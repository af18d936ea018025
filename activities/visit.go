package activities

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/resolve"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/workspace"
)

// ErrTypeWorkspace: the run's workspace could not be restored or
// snapshotted (a hostile or incomplete snapshot, a workspace over its
// limits, a store that stayed down). The visit fails; the run continues
// with `tether resume` once the cause is fixed.
const ErrTypeWorkspace = "WorkspaceFailed"

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
	root, cwd, err := a.visitDirs(req)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
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
		if err := a.restoreWorkspace(ctx, req, ws, res); err != nil {
			return nil, err
		}
	}
	// The node's directory exists even where the snapshot has none (a
	// snapshot keeps no empty directories).
	if err := mkdirAll(cwd); err != nil {
		return nil, fmt.Errorf("node %q: create its directory: %w", req.NodeID, err)
	}

	asked, err := a.runVisit(ctx, req, cwd, ws, lost, res)
	if err != nil {
		return nil, err
	}

	if ws != nil && (!req.Branch || req.BranchName != "") {
		if err := a.snapshotVisit(ctx, req, ws, asked, res); err != nil {
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
		out, err := a.runTool(runCtx, req.Node, req.Visit, req.Input, promptWorkspace(ctx, ws, req), cwd, lost)
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

// restoreWorkspace brings the visit's workspace to the snapshot it
// starts from, and marks the run's workspace as in use.
func (a *Activities) restoreWorkspace(ctx context.Context, req *VisitRequest, ws *workspace.Workspace, res *VisitResult) error {
	if req.Workspace != nil {
		got, err := ws.Restore(ctx, req.Workspace)
		if err != nil {
			return workspaceError(req, "restore", err)
		}
		res.WorkspaceHit, res.WorkspaceFetched = got.Hit, got.Fetched
		a.Metrics.RestoreBytes(telemetry.WhatWorkspace, got.Fetched)
	}
	ws.Touched()
	return nil
}

// snapshotVisit commits what the visit left in the workspace, one commit
// per visit, and says in res what the snapshot holds and left out.
func (a *Activities) snapshotVisit(ctx context.Context, req *VisitRequest, ws *workspace.Workspace, asked bool, res *VisitResult) error {
	msg := fmt.Sprintf("%s visit %d", req.NodeID, req.Visit)
	if asked {
		msg += " (asked the user)"
	}
	details := []string{"run: " + req.RunID, "node: " + req.NodeID, fmt.Sprintf("visit: %d", req.Visit), "kind: " + string(req.Node.Kind)}
	if req.BranchName != "" {
		details = append(details, "branch: "+req.BranchName)
	}
	if res.Backend != "" {
		details = append(details, "backend: "+res.Backend, "session: "+res.SessionID)
	}
	next, snap, err := ws.Snapshot(ctx, req.Workspace, workspace.CommitInfo{Message: msg, Details: details, When: req.Started})
	if err != nil {
		return workspaceError(req, "snapshot", err)
	}
	res.WorkspaceNotes, res.WorkspaceUploaded = snap.Notes, snap.Uploaded
	a.Metrics.PackBytes(telemetry.WhatWorkspace, snap.Uploaded)
	if snap.Changed || req.Workspace == nil || next != req.Workspace {
		// A new commit, or the same one with news of what was left
		// out (tether status shows it).
		res.Workspace = next
	}
	return nil
}

// maxPromptDiff bounds the diff a prompt sees as .workspace.diff.
const maxPromptDiff = 64 << 10

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

// promptWorkspace is what a prompt sees as .workspace: the snapshot the
// visit runs on, the run's first one, and (only when the prompt asks for
// it) the diff between them.
func promptWorkspace(ctx context.Context, ws *workspace.Workspace, req *VisitRequest) map[string]any {
	st := req.Workspace
	if st == nil {
		st = &runstore.WorkspaceState{}
	}
	data := map[string]any{"commit": st.Commit, "base": st.Base, "files": st.Files, "diff": "", "branches": ""}
	if ws != nil && st.Commit != "" && req.Node.Mentions(".workspace.diff") {
		d, err := ws.Diff(ctx, st.Base, st.Commit, maxPromptDiff)
		if err != nil {
			d = fmt.Sprintf("(the diff could not be computed: %v)", err)
		}
		data["diff"] = d
	}
	// The workflow sends the joined branches only to a node that uses them.
	if ws != nil && len(req.Joined) > 0 {
		data["branches"] = branchDiffs(ctx, ws, req.Joined)
	}
	return data
}

// branchDiffs is what a prompt sees as .workspace.branches: each branch of
// the latest join with its change against the fan-out as a diff, within
// maxPromptDiff in all.
func branchDiffs(ctx context.Context, ws *workspace.Workspace, joined []runstore.BranchState) string {
	var b strings.Builder
	each := maxPromptDiff / len(joined)
	for _, br := range joined {
		kept := ""
		if br.Kept {
			kept = " (kept)"
		}
		fmt.Fprintf(&b, "## branch %s%s\n\n", br.Name, kept)
		head := ""
		if br.Workspace != nil {
			head = br.Workspace.Commit
		}
		var d string
		var err error
		switch {
		case head == br.Base:
			d = "(no change)\n"
		case runstore.ValidateBranchName(br.Name) != nil:
			err = fmt.Errorf("not a branch name")
		default:
			if err = ws.Load(ctx, br.Workspace); err == nil {
				d, err = ws.Diff(ctx, br.Base, head, each)
			}
		}
		if err != nil {
			d = fmt.Sprintf("(the diff could not be computed: %v)\n", err)
		}
		b.WriteString(d)
		b.WriteString("\n")
	}
	return b.String()
}

func sessionOf(req *VisitRequest) string {
	if req.Session != nil {
		return req.Session.SessionID
	}
	return ""
}

// visitDirs returns the workspace root of the visit ("" when the node runs
// in an absolute directory Tether does not manage) and the directory the
// node runs in.
func (a *Activities) visitDirs(req *VisitRequest) (root, cwd string, err error) {
	// The run and node ids become directory names: one that is not an id
	// (`../../x`) would create directories outside the work root.
	if err := runstore.ValidateRunID(req.RunID); err != nil {
		return "", "", err
	}
	if req.Branch {
		if err := runstore.ValidateNodeID(req.NodeID); err != nil {
			return "", "", err
		}
		if req.BranchName != "" {
			if err := runstore.ValidateBranchName(req.BranchName); err != nil {
				return "", "", err
			}
		}
	}
	wd := req.Node.Workdir
	if filepath.IsAbs(wd) {
		return "", filepath.Clean(wd), nil
	}
	root = filepath.Join(a.WorkDir, req.RunID)
	switch {
	case req.BranchName != "":
		// The branch's own directory, beside the run's (never inside it,
		// where a snapshot would take it in).
		root = filepath.Join(a.WorkDir, req.RunID+"@"+req.BranchName)
	case req.Branch:
		// A private copy per branch node.
		root = filepath.Join(a.WorkDir, req.RunID+"@"+req.NodeID)
	}
	cwd = root
	if wd != "" {
		if !filepath.IsLocal(wd) {
			return "", "", fmt.Errorf("node %q: workdir %q leaves the run's workspace; use a relative path inside it or an absolute path", req.NodeID, wd)
		}
		cwd = filepath.Join(root, wd)
	}
	return root, cwd, nil
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
			note, x, err := a.restoreSession(ctx, b, env, req)
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
			res.SessionNote = withoutRefs(res.SessionNote)
			a.logger().Warn("session not resumed; the visit runs fresh", "run", req.RunID, "node", req.NodeID, "plan", req.Session.Kind, "reason", res.SessionNote)
		}
	}
	run := agentRun{
		runID: req.RunID, nodeID: req.NodeID, visit: req.Visit, node: req.Node, b: b, env: env,
		input: input, prev: req.PrevOutput, sessionID: sessionID, fork: req.Fork && sessionID != "",
		packTo: req.PackTo, pauseTo: req.PauseTo, workspace: wsData,
		incremental: req.Incremental, extend: extend, lost: lost, guidance: req.Guidance,
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

// blobKey matches what could be a blob key in a note's text: a run's keys
// (runs/…) and any path through a sessions folder.
var blobKey = regexp.MustCompile(`[\w.@+/-]*(?:\bruns/|/sessions/)[\w.@+/-]*`)

// withoutRefs is a session note with anything that looks like a blob key
// taken out. A note lands on the visit's output, its loop snapshots and
// its log line, which outlive the blob (ADR-089: no ref on outputs), and
// part of a note can be an error quoting an untrusted archive: the notes
// Tether writes name what happened, never a ref, and this holds even for
// text it did not write.
func withoutRefs(note string) string {
	return blobKey.ReplaceAllString(note, "(a blob)")
}

// settingsChanged says why a node's own conversation (its slot, or the
// conversation it paused in) may not be continued: the settings that
// define it (model, prompts, tools, permissions) are not those it was
// made under. It is "" when they are the same, or when the plan continues
// another node's conversation (inherit, fork), whose settings may differ
// by design.
func (a *Activities) settingsChanged(b agent.Backend, env agent.Env, req *VisitRequest) string {
	sp := req.Session
	if sp.Fingerprint == "" || (sp.Kind != resolve.UnpackOwnSlot.String() && sp.Kind != resolve.UnpackPause.String()) {
		return ""
	}
	now := b.Fingerprint(agentRun{node: req.Node, env: env, sessionID: sp.SessionID}.request())
	if now == sp.Fingerprint {
		return ""
	}
	return fmt.Sprintf("the node's settings changed since its conversation began (fingerprint %.12s, now %.12s: model, prompts, tools or permissions); started a fresh conversation", sp.Fingerprint, now)
}

// PartsDigestPrefix starts the Digest of a plan whose slot has parts. A
// worker built before slots had parts reads only StateRef and Digest, and
// would resume the base alone, without the turns its parts hold; this
// prefix makes its digest check refuse the blob, so that it runs the visit
// fresh and says so, never on a silently shorter conversation.
const PartsDigestPrefix = "parts+"

// baseDigest is the recorded digest of the plan's base blob.
func (sp *SessionPlan) baseDigest() string {
	return strings.TrimPrefix(sp.Digest, PartsDigestPrefix)
}

// restoreSession makes the planned session live in this worker's root. It
// returns a note when the session cannot be resumed (a missing, corrupt or
// foreign blob, one whose digest differs from the recorded one, a part
// that does not follow the blobs before it, or a session the live root
// does not hold): the visit then runs fresh. A store fault is an error,
// never taken for absence. It also returns the slot as this worker now
// holds it, for an incremental pack to extend.
func (a *Activities) restoreSession(ctx context.Context, b agent.Backend, env agent.Env, req *VisitRequest) (string, *extension, error) {
	sp := req.Session
	packer := b.Packer(env)
	if packer == nil {
		return fmt.Sprintf("backend %s cannot restore sessions", b.Name()), nil, nil
	}
	if sp.StateRef == "" {
		if !packer.HasSession(ctx, sp.SessionID) {
			return fmt.Sprintf("session %s is not present on this worker", sp.SessionID), nil, nil
		}
		return "", nil, nil
	}
	x := &extension{last: sp.baseDigest(), parts: len(sp.Parts), baseBytes: sp.Size}
	for _, p := range sp.Parts {
		x.last = p.Digest
		x.partBytes += p.Size
	}
	if live := a.live.get(liveKey(b.Name(), env, sp.SessionID)); x.last != "" && live.digest == x.last && live.sig == signature(ctx, packer, sp.SessionID) {
		// This worker packed (or restored) exactly that slot into its live
		// root, and neither a visit nor anything else touched the session
		// since: nothing to restore.
		x.manifest = live.manifest
		return "", x, nil
	}
	blobs, note, err := a.fetchSlot(ctx, req)
	if note != "" || err != nil {
		return note, nil, err
	}
	ip, incremental := packer.(incrementalPacker)
	switch {
	case len(blobs) > 1 && !incremental:
		return fmt.Sprintf("backend %s cannot apply the incremental packs of its slot", b.Name()), nil, nil
	case incremental && (len(blobs) > 1 || req.Incremental):
		m, err := ip.UnpackParts(ctx, sp.SessionID, blobs...)
		if err != nil {
			return fmt.Sprintf("the session's blobs cannot be unpacked: %v", err), nil, nil
		}
		x.manifest = m
		a.live.set(liveKey(b.Name(), env, sp.SessionID), liveSession{digest: x.last, sig: signature(ctx, packer, sp.SessionID), manifest: m})
	default:
		if err := packer.UnpackSession(ctx, sp.SessionID, blobs[0]); err != nil {
			return fmt.Sprintf("the session's blob cannot be unpacked: %v", err), nil, nil
		}
	}
	var n int
	for _, d := range blobs {
		n += len(d)
	}
	a.Metrics.RestoreBytes(telemetry.WhatSession, int64(n))
	a.logger().Info("session restored", "run", req.RunID, "node", req.NodeID, "backend", b.Name(), "session_id", sp.SessionID, "bytes", n, "parts", len(sp.Parts))
	return "", x, nil
}

// fetchSlot reads the planned slot's blobs, its base and then its parts,
// each checked against its recorded digest. It returns a note instead when
// one is missing, too large, or not the blob the checkpoint recorded.
func (a *Activities) fetchSlot(ctx context.Context, req *VisitRequest) ([][]byte, string, error) {
	sp := req.Session
	type ref struct{ key, digest string }
	refs := []ref{{sp.StateRef, sp.baseDigest()}}
	for i, p := range sp.Parts {
		if p.Digest == "" {
			return nil, fmt.Sprintf("the checkpoint records no digest for part %d of the session's slot; it is not unpacked", i+1), nil
		}
		refs = append(refs, ref{p.Ref, p.Digest})
	}
	blobs := make([][]byte, 0, len(refs))
	for _, r := range refs {
		data, err := blob.GetBytesMax(ctx, a.Blobs, r.key, a.sessionBlobMax())
		switch {
		case errors.Is(err, blob.ErrNotFound):
			return nil, "the session's blob is gone from the store", nil
		case errors.Is(err, blob.ErrTooLarge):
			return nil, fmt.Sprintf("the session's blob is larger than any session archive may be (%d bytes)", a.sessionBlobMax()), nil
		case err != nil:
			return nil, "", fmt.Errorf("read session blob for node %q: %w", req.NodeID, err)
		}
		if note := checkSessionBlob(req.RunID, r.key, r.digest, data); note != "" {
			return nil, note, nil
		}
		blobs = append(blobs, data)
	}
	return blobs, "", nil
}

// agentEnv is a backend's live root for one run on this worker and the
// directory the agent works in. Each run has roots of its own, so that a
// confined agent, which may write its root, sees no other run's sessions.
func (a *Activities) agentEnv(backendName, runID, cwd string) (agent.Env, error) {
	env := agent.Env{StateRoot: filepath.Join(a.StateDir, "runs", runID, backendName), Workdir: cwd}
	for _, d := range []string{env.StateRoot, env.Workdir} {
		if err := mkdirAll(d); err != nil {
			return agent.Env{}, err
		}
	}
	return env, nil
}

// workspaceError types a workspace failure: a snapshot that is refused,
// incomplete or over the limits fails the visit for good; anything else
// (a store fault) may pass and is retried.
func workspaceError(req *VisitRequest, what string, err error) error {
	if finalWorkspaceError(err) {
		msg := fmt.Sprintf("node %q visit %d: workspace %s of run %s failed: %v; fix the cause, then `tether resume %s`", req.NodeID, req.Visit, what, req.RunID, err, req.RunID)
		return temporal.NewNonRetryableApplicationError(msg, ErrTypeWorkspace, err)
	}
	return fmt.Errorf("node %q visit %d: workspace %s: %w", req.NodeID, req.Visit, what, err)
}

// finalWorkspaceError reports a workspace failure that no retry cures: a
// snapshot that is refused, incomplete or over the limits.
func finalWorkspaceError(err error) bool {
	for _, typed := range []error{
		workspace.ErrTooLarge, workspace.ErrUnsafePath, workspace.ErrLink, workspace.ErrSpecial,
		workspace.ErrDenied, workspace.ErrCorrupt, workspace.ErrDigestMismatch, workspace.ErrMissing,
	} {
		if errors.Is(err, typed) {
			return true
		}
	}
	return false
}

// ImportRequest makes the first snapshot of a run's workspace from a
// source the worker can read.
type ImportRequest struct {
	RunID string `json:"run_id"`
	From  string `json:"from"`
	Ref   string `json:"ref,omitempty"`
	// Started is the run's start on the workflow's clock: the commit time.
	Started time.Time `json:"started"`
}

// ImportWorkspace reads a directory or a git repository at a ref (never
// its .git) into the run's first workspace snapshot, for runs started
// without `tether run` (whose CLI imports the source itself).
func (a *Activities) ImportWorkspace(ctx context.Context, req *ImportRequest) (*runstore.WorkspaceState, error) {
	stop := a.heartbeat(ctx)
	defer stop()
	lim := workspace.Limits{}
	if a.Workspaces != nil {
		lim = a.Workspaces.Limits()
	}
	st, rep, err := workspace.Import(ctx, a.Blobs, req.RunID, workspace.Source{From: req.From, Ref: req.Ref}, lim, req.Started)
	if err != nil {
		if errors.Is(err, workspace.ErrSource) || errors.Is(err, workspace.ErrTooLarge) || errors.Is(err, workspace.ErrUnsafePath) {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s: import the workspace from %s: %v", req.RunID, req.From, err), ErrTypeWorkspace, err)
		}
		return nil, err
	}
	a.Metrics.PackBytes(telemetry.WhatWorkspace, rep.Uploaded)
	a.logger().Info("workspace imported", "run", req.RunID, "from", req.From, "ref", req.Ref, "files", st.Files, "bytes", st.Bytes)
	return st, nil
}

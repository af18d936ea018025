// The workspace half of a visit: restored before it, snapshotted after
// it, shown to its prompt, and imported for a run's first visit; and how
// a workspace failure is typed.

package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/workspace"
)

// ErrTypeWorkspace: the run's workspace could not be restored or
// snapshotted (a hostile or incomplete snapshot, a workspace over its
// limits, a store that stayed down). The visit fails; the run continues
// with `tether resume` once the cause is fixed.
const ErrTypeWorkspace = "WorkspaceFailed"

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

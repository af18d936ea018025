package activities

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/workspace"
)

// VisitBranch is Visit for a visit inside a fan-out branch that keeps its
// files (BranchName set). It is an activity type of its own so that a
// worker built before branch workspaces, which would take the request for
// an old branch visit and throw its files away, never receives one: its
// task waits for a worker that knows the type.
func (a *Activities) VisitBranch(ctx context.Context, req *VisitRequest) (*VisitResult, error) {
	if req == nil || !req.Branch || req.BranchName == "" {
		return nil, temporal.NewNonRetryableApplicationError("VisitBranch needs a branch visit with its branch's name", ErrTypeBadRequest, nil)
	}
	return a.Visit(ctx, req)
}

// JoinRequest is a join's workspace work: measure what each fan-out
// branch changed against the trunk at the fan-out and, for a merge join,
// merge every branch into the trunk.
type JoinRequest struct {
	RunID  string `json:"run_id"`
	JoinID string `json:"join_id"`
	Visit  int    `json:"visit"`
	// Trunk is the workspace at the fan-out: every branch's merge base.
	Trunk    *runstore.WorkspaceState `json:"trunk"`
	Branches []JoinBranch             `json:"branches"`
	Merge    bool                     `json:"merge,omitempty"`
	// Started is the join's time on the workflow's clock: the merge
	// commit's, so a retried merge makes the same commit.
	Started time.Time `json:"started"`
}

// JoinBranch is one branch's name and head.
type JoinBranch struct {
	Name  string                   `json:"name"`
	State *runstore.WorkspaceState `json:"state"`
}

// DiffStat is a branch's change against the trunk at its fan-out, and
// Conflict a path where a merge found branches changing the same lines
// (or one deleting what another changed): the merged file holds git's
// conflict markers, and the join's output names it with both sides.
type (
	DiffStat = workspace.DiffStat
	Conflict = workspace.Conflict
)

// JoinResult is what the join's workspace work found.
type JoinResult struct {
	// Stats are the branches' changes, in the request's order.
	Stats []DiffStat `json:"stats"`
	// Merged is the merge commit's state (nil when no branch changed
	// anything, or no merge was asked for); Conflicts its conflicts.
	Merged    *runstore.WorkspaceState `json:"merged,omitempty"`
	Conflicts []Conflict               `json:"conflicts,omitempty"`
	Uploaded  int64                    `json:"uploaded,omitempty"`
}

// JoinWorkspaces measures and, when asked, merges a fan-out's branches at
// its join, on any worker: the branches' packs come from the blob store,
// checked like every pack.
func (a *Activities) JoinWorkspaces(ctx context.Context, req *JoinRequest) (*JoinResult, error) {
	if req == nil || req.Trunk == nil || a.Workspaces == nil {
		return nil, temporal.NewNonRetryableApplicationError("JoinWorkspaces needs a trunk state and a worker with workspaces", ErrTypeBadRequest, nil)
	}
	if err := errors.Join(runstore.ValidateRunID(req.RunID), runstore.ValidateNodeID(req.JoinID), req.Trunk.Validate()); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
	}
	for _, b := range req.Branches {
		if err := errors.Join(runstore.ValidateBranchName(b.Name), b.State.Validate()); err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
		}
	}
	stop := a.heartbeat(ctx)
	defer stop()
	// A directory of the join's own, beside the run's (a merge writes in
	// it); measuring alone never touches it.
	ws, err := a.Workspaces.Open(ctx, req.RunID, filepath.Join(a.WorkDir, req.RunID+"@"+req.JoinID))
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	fail := func(what string, err error) error {
		return joinError(req, what, err)
	}
	if err := ws.Load(ctx, req.Trunk); err != nil {
		return nil, fail("load the trunk", err)
	}
	res := &JoinResult{Stats: make([]DiffStat, len(req.Branches))}
	var merge []workspace.MergeBranch
	for i, b := range req.Branches {
		if b.State == nil || b.State.Commit == req.Trunk.Commit {
			continue
		}
		if err := ws.Load(ctx, b.State); err != nil {
			return nil, fail("load branch "+b.Name, err)
		}
		st, err := ws.Stat(ctx, req.Trunk.Commit, b.State.Commit)
		if err != nil {
			return nil, fail("measure branch "+b.Name, err)
		}
		res.Stats[i] = st
		merge = append(merge, workspace.MergeBranch{Name: b.Name, State: b.State})
	}
	if !req.Merge || len(merge) == 0 {
		return res, nil
	}
	names := make([]string, len(merge))
	for i, b := range merge {
		names[i] = b.Name
	}
	info := workspace.CommitInfo{
		Message: fmt.Sprintf("%s merge %d", req.JoinID, req.Visit),
		Details: []string{"run: " + req.RunID, "node: " + req.JoinID, fmt.Sprintf("visit: %d", req.Visit), "kind: join", "branches: " + strings.Join(names, ", ")},
		When:    req.Started,
	}
	next, m, err := ws.Merge(ctx, req.Trunk, merge, info)
	if err != nil {
		return nil, fail("merge", err)
	}
	a.Metrics.PackBytes(telemetry.WhatWorkspace, m.Uploaded)
	res.Uploaded = m.Uploaded
	if m.Changed {
		res.Merged = next
	}
	res.Conflicts = m.Conflicts
	a.logger().Info("branches merged", "run", req.RunID, "join", req.JoinID, "branches", len(merge), "conflicts", len(res.Conflicts))
	return res, nil
}

// joinError types a join's workspace failure as workspaceError types a
// visit's.
func joinError(req *JoinRequest, what string, err error) error {
	if finalWorkspaceError(err) {
		msg := fmt.Sprintf("join %q visit %d: %s of run %s failed: %v; fix the cause, then `tether resume %s`", req.JoinID, req.Visit, what, req.RunID, err, req.RunID)
		return temporal.NewNonRetryableApplicationError(msg, ErrTypeWorkspace, err)
	}
	return fmt.Errorf("join %q visit %d: %s: %w", req.JoinID, req.Visit, what, err)
}

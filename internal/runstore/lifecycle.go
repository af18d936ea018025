package runstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tether-run/tether/internal/blob"
)

// Refs lists every blob a checkpoint names: its persist slots, the slots
// kept for rewinds, the pause blob, and the workspace's packs.
func (cp *Checkpoint) Refs() []string {
	var refs []string
	for _, k := range slices.Sorted(maps.Keys(cp.NodeSessions)) {
		refs = append(refs, cp.NodeSessions[k].Refs()...)
	}
	for _, k := range slices.Sorted(maps.Keys(cp.RetainedSessions)) {
		for _, base := range cp.RetainedSessions[k] {
			refs = append(refs, base)
			refs = append(refs, cp.RetainedParts[k][base]...)
		}
	}
	if cp.Pause != nil && cp.Pause.BackendSessionStateRef != "" {
		refs = append(refs, cp.Pause.BackendSessionStateRef)
	}
	refs = append(refs, cp.Workspace.Keys()...)
	return append(refs, cp.BranchKeys()...)
}

// Fork copies a checkpoint for a new run: outputs, visits and the
// workspace's state stay; every session ref goes (ADR-089: fork omits both
// refs, and the slots kept for rewinds with them). The caller copies the
// workspaces' packs into the new run (CopyWorkspaces) and starts it.
func Fork(src *Checkpoint) *Checkpoint {
	cp := *src
	cp.NodeSessions = nil
	cp.RetainedSessions = nil
	cp.RetainedParts = nil
	cp.Branches, cp.Joined = slices.Clone(src.Branches), slices.Clone(src.Joined)
	if src.Pause != nil {
		p := *src.Pause
		p.BackendSessionStateRef = ""
		p.BackendSessionDigest = ""
		cp.Pause = &p
	}
	cp.Seq = 0
	cp.Status = StatusRunning
	cp.Error = ""
	cp.Lineage = &Lineage{Run: src.RunID, Seq: src.Seq, Kind: "fork"}
	return &cp
}

// RewindReport says what Rewind did.
type RewindReport struct {
	// Checkpoint is the new checkpoint, a copy of the target, to run on.
	Checkpoint *Checkpoint
	// Dropped are the blobs only later checkpoints named, deleted after the
	// new checkpoint was written.
	Dropped []string
	// Errors are the deletes that failed; the blobs stay for DeleteRun.
	Errors []error
}

// RewindOption changes what Rewind writes.
type RewindOption func(*rewindOptions)

type rewindOptions struct{ graph json.RawMessage }

// RewindGraph makes the rewound run execute the graph g (its JSON, as
// Checkpoint.Graph holds it).
func RewindGraph(g json.RawMessage) RewindOption {
	return func(o *rewindOptions) { o.graph = g }
}

// Rewind makes checkpoint seq of run the run's latest again: it writes a
// copy of it under the next free sequence number first, then deletes the
// blobs that only later checkpoints named (ADR-089: checkpoint without the
// dropped refs first, then delete), which drops those checkpoints (the
// rule is in rewind.go). A failed delete leaves the blob for DeleteRun; it
// does not fail the rewind. A checkpoint an earlier rewind dropped is
// refused (ErrDropped), and so is one at which the run had ended
// (ErrNothingToRun).
//
// With RewindGraph, the new checkpoint runs that graph instead of the one
// stored in seq: the caller took it from a source it trusts more than the
// store (the run's own workflow input in Temporal).
func (s *Store) Rewind(ctx context.Context, run string, seq int64, opts ...RewindOption) (*RewindReport, error) {
	var o rewindOptions
	for _, opt := range opts {
		opt(&o)
	}
	target, err := s.GetWhole(ctx, run, seq)
	if err != nil {
		return nil, err
	}
	if err := ended(run, target); err != nil {
		return nil, err
	}
	infos, err := s.List(ctx, run)
	if err != nil {
		return nil, err
	}
	kept, later := map[string]bool{}, map[string]bool{}
	var dropped []string
	var last int64
	for _, info := range infos {
		last = max(last, info.Seq)
		cp, err := s.getBare(ctx, run, info.Seq)
		if err != nil {
			return nil, err
		}
		for _, r := range cp.Refs() {
			if info.Seq <= seq {
				kept[r] = true
			} else if !later[r] {
				later[r] = true
				dropped = append(dropped, r)
			}
		}
	}
	dropped = slices.DeleteFunc(dropped, func(r string) bool { return kept[r] })
	cp := *target
	cp.Seq = last + 1
	cp.Status = StatusRunning
	cp.Error = ""
	cp.Lineage = &Lineage{Run: run, Seq: seq, Kind: "rewind", At: cp.Seq}
	if o.graph != nil {
		cp.Graph = o.graph
	}
	if err := s.Save(ctx, run, &cp); err != nil {
		return nil, fmt.Errorf("runstore: write the rewind checkpoint of run %q: %w", run, err)
	}
	rep := &RewindReport{Checkpoint: &cp, Dropped: dropped}
	for _, r := range dropped {
		if err := s.b.Delete(ctx, r); err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("delete %s: %w", r, err))
		}
	}
	return rep, nil
}

// CopyWorkspace copies the packs of a workspace of run from into run to's
// part of the store and returns the state naming the copies, so a fork
// never depends on the run it was forked from.
func (s *Store) CopyWorkspace(ctx context.Context, from, to string, st *WorkspaceState) (*WorkspaceState, error) {
	return s.copyWorkspace(ctx, from, to, st, map[string]bool{})
}

// CopyWorkspaces copies every workspace a forked checkpoint cp of run from
// names (the run's and each fan-out branch's) into run to's part of the
// store, each pack once though several states share it, and makes cp name
// the copies.
func (s *Store) CopyWorkspaces(ctx context.Context, from, to string, cp *Checkpoint) error {
	copied := map[string]bool{}
	var err error
	if cp.Workspace, err = s.copyWorkspace(ctx, from, to, cp.Workspace, copied); err != nil {
		return err
	}
	for _, list := range [][]BranchState{cp.Branches, cp.Joined} {
		for i := range list {
			if list[i].Workspace, err = s.copyWorkspace(ctx, from, to, list[i].Workspace, copied); err != nil {
				return fmt.Errorf("branch %s: %w", list[i].Name, err)
			}
		}
	}
	return nil
}

// copyWorkspace is CopyWorkspace, skipping the packs already in copied
// (by their new key) and adding the ones it copies.
func (s *Store) copyWorkspace(ctx context.Context, from, to string, st *WorkspaceState, copied map[string]bool) (*WorkspaceState, error) {
	if st == nil {
		return nil, nil
	}
	out := *st
	out.Packs = nil
	for _, p := range st.Packs {
		digest, err := WorkspacePackDigest(from, p.Key)
		if err != nil {
			return nil, err
		}
		key := WorkspacePackKey(to, digest)
		if !copied[key] {
			rc, err := s.b.Get(ctx, p.Key)
			if err != nil {
				return nil, fmt.Errorf("runstore: read workspace pack %s: %w", p.Key, err)
			}
			err = s.b.Put(ctx, key, rc, p.Size, blob.CreateOnly())
			rc.Close()
			if err != nil && !errors.Is(err, blob.ErrExists) {
				return nil, fmt.Errorf("runstore: copy workspace pack to %s: %w", key, err)
			}
			copied[key] = true
		}
		p.Key = key
		out.Packs = append(out.Packs, p)
	}
	return &out, nil
}

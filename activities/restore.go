// The session half of a visit: what the plan asks to continue, whether
// the node's settings still allow it, and the slot's blobs fetched and
// made live in this worker's root (ADR-089's restore rules).

package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/resolve"
	"github.com/tether-run/tether/internal/telemetry"
)

// sessionOf is the id of the conversation the visit plans to continue,
// or "" for a fresh one.
func sessionOf(req *VisitRequest) string {
	if req.Session != nil {
		return req.Session.SessionID
	}
	return ""
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

// Package resolve decides, for one visit of an agent node, which
// conversation the visit may continue. It is ADR-089's resolution order as a
// pure function: no I/O, no Temporal, no clock. The workflow calls it, then
// carries out the plan with activities, and on any failure of that plan
// strips the session keys and runs fresh (Plan.Stripped gives that input).
//
// The order is:
//
//  0. capability: only a backend with the persist capability continues a
//     conversation; any other strips inbound session keys and runs fresh;
//  1. mid-node pause: an answered in-node ask_user resumes from the pause
//     ref, never from the node's completed-visit slot;
//  2. a persist node's own completed-visit slot;
//  3. visit-1 inbound provenance: the inbound id counts only when exactly
//     one source node is eligible (an edge from it delivered the id, its
//     output's _session_id equals the id, its _backend equals the capability
//     backend); then that source's slot, else a has-session check with the
//     fingerprint taken from the source's output;
//  4. fresh.
package resolve

import (
	"maps"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// Kind is what a plan asks the runtime to do before executing.
type Kind int

// Plan kinds.
const (
	// Fresh runs a new conversation; the input carries no session keys.
	Fresh Kind = iota
	// UnpackPause restores the in-flight conversation of an answered
	// ask_user from the pause ref.
	UnpackPause
	// UnpackOwnSlot restores the node's own last completed visit.
	UnpackOwnSlot
	// UnpackSourceSlot restores the eligible source node's completed visit
	// (visit-1 inherit).
	UnpackSourceSlot
	// HasSession asks the live root whether the inbound session exists.
	HasSession
)

var kindNames = []string{"fresh", "unpack_pause", "unpack_own_slot", "unpack_source_slot", "has_session"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k >= 0 {
		return kindNames[k]
	}
	return "unknown"
}

// Delivery is one incoming edge's contribution to the visit's input: the
// source node and the _session_id its mapping produced ("" when none).
type Delivery struct {
	From      string
	SessionID string
}

// Request is everything resolution looks at.
type Request struct {
	Node graph.Node
	// Backend is the effective backend of this visit.
	Backend string
	// Input is the inbound input after edge mapping.
	Input map[string]any
	// Deliveries are the edges that produced Input.
	Deliveries []Delivery
	// Answering is true when this visit re-invokes an answered ask_user.
	Answering bool

	Outputs      map[string]map[string]any
	NodeSessions map[string]runstore.NodeSessionSlot
	Pause        *runstore.PauseInfo
}

// Plan is the resolution's answer.
type Plan struct {
	Kind Kind
	// Backend is the capability backend the plan is for.
	Backend string
	// SessionID and Fingerprint are what the visit resumes with once the
	// plan's unpack or has-session succeeded.
	SessionID   string
	Fingerprint string
	// StateRef is the blob to unpack (Unpack* kinds) and Digest its
	// recorded sha256 ("" when none was recorded).
	StateRef string
	Digest   string
	// Size is the size of the blob at StateRef, when recorded, and Parts
	// the slot's incremental packs after it, in order.
	Size  int64
	Parts []runstore.SessionPart
	// Fork continues a copy of the restored conversation under a new id
	// (session: fork).
	Fork bool
	// Source is the eligible source node (UnpackSourceSlot, HasSession).
	Source string
	// Input is the visit's input with the session keys set as the plan
	// says; Stripped is the same input with both keys removed, for fresh
	// and for any failure of the plan.
	Input    map[string]any
	Stripped map[string]any
	// Reason says why, for logs and status.
	Reason string
}

// Resolve returns the plan for one visit.
func Resolve(r Request) Plan {
	stripped := strip(r.Input)
	fresh := func(reason string) Plan {
		return Plan{Kind: Fresh, Backend: r.Backend, Input: stripped, Stripped: stripped, Reason: reason}
	}

	// 0. Capability.
	if !catalogue.HasPersist(r.Backend) {
		return fresh("backend " + r.Backend + " has no persist capability")
	}

	// 1. Mid-node pause. Never overlay the node's completed-visit slot.
	if r.Answering {
		p := r.Pause
		if p == nil || p.NodeID != r.Node.ID || p.BackendSessionStateRef == "" || p.SessionID == "" || p.Backend != r.Backend {
			return fresh("answered ask_user has no usable pause ref")
		}
		return Plan{
			Kind: UnpackPause, Backend: r.Backend,
			SessionID: p.SessionID, Fingerprint: p.Fingerprint, StateRef: p.BackendSessionStateRef, Digest: p.BackendSessionDigest,
			Input:    with(stripped, p.SessionID, p.Fingerprint),
			Stripped: stripped,
			Reason:   "resume in-flight ask_user from its pause ref",
		}
	}

	// Only persist continues its own conversation; inherit and fork take
	// the inbound one under the same provenance rules.
	if r.Node.Session == graph.SessionFresh {
		return fresh("session: fresh")
	}

	// 2. Own completed-visit slot.
	if r.Node.Session == graph.SessionPersist {
		if slot, ok := r.NodeSessions[r.Node.ID]; ok && slot.StateRef != "" && slot.SessionID != "" && slot.Backend == r.Backend {
			return Plan{
				Kind: UnpackOwnSlot, Backend: r.Backend,
				SessionID: slot.SessionID, Fingerprint: slot.Fingerprint, StateRef: slot.StateRef, Digest: slot.Digest, Size: slot.Size, Parts: slot.Parts,
				Input:    with(stripped, slot.SessionID, slot.Fingerprint),
				Stripped: stripped,
				Reason:   "persist: own completed-visit slot",
			}
		}
	}

	// 3. Visit-1 inbound provenance, from the sources' output stamps.
	id, _ := r.Input[agent.SessionIDKey].(string)
	if id == "" {
		return fresh("no inbound session id")
	}
	var eligible []string
	// failed is the furthest of the three rules a source got to before
	// one failed it: what a fresh plan's reason names.
	failed := 1
	for _, d := range r.Deliveries {
		if d.SessionID != id || contains(eligible, d.From) {
			continue
		}
		out := r.Outputs[d.From]
		if s, _ := out[agent.SessionIDKey].(string); s != id {
			failed = max(failed, 2)
			continue
		}
		if b, _ := out[agent.BackendKey].(string); b != r.Backend {
			failed = 3
			continue
		}
		eligible = append(eligible, d.From)
	}
	if len(eligible) != 1 {
		if len(eligible) == 0 {
			return fresh("inbound session id has no stamp-eligible source: " + provenanceRules[failed-1])
		}
		return fresh("inbound session id matches more than one source")
	}
	src := eligible[0]
	if slot, ok := r.NodeSessions[src]; ok && slot.StateRef != "" && slot.SessionID == id && slot.Backend == r.Backend {
		return Plan{
			Kind: UnpackSourceSlot, Backend: r.Backend,
			SessionID: id, Fingerprint: slot.Fingerprint, StateRef: slot.StateRef, Digest: slot.Digest, Size: slot.Size, Parts: slot.Parts, Source: src,
			Fork:     r.Node.Session == graph.SessionFork,
			Input:    with(stripped, id, slot.Fingerprint),
			Stripped: stripped,
			Reason:   "inbound session from " + src + ": its completed-visit slot",
		}
	}
	fp, _ := r.Outputs[src][agent.SessionFingerprintKey].(string)
	return Plan{
		Kind: HasSession, Backend: r.Backend,
		SessionID: id, Fingerprint: fp, Source: src, Fork: r.Node.Session == graph.SessionFork,
		Input:    with(stripped, id, fp),
		Stripped: stripped,
		Reason:   "inbound session from " + src + ": has-session check",
	}
}

// provenanceRules say why no source was eligible, by the first of ADR-089's
// three provenance rules that every source failed.
var provenanceRules = []string{
	"rule 1 failed: no incoming edge's own mapping delivered it",
	"rule 2 failed: no source's output carries it as the session it served",
	"rule 3 failed: its source served it on another backend",
}

func strip(in map[string]any) map[string]any {
	out := maps.Clone(in)
	if out == nil {
		out = map[string]any{}
	}
	delete(out, agent.SessionIDKey)
	delete(out, agent.SessionFingerprintKey)
	delete(out, agent.SessionStateKey)
	delete(out, agent.SessionStateBlobKey)
	return out
}

func with(in map[string]any, id, fp string) map[string]any {
	out := maps.Clone(in)
	if out == nil {
		out = map[string]any{}
	}
	out[agent.SessionIDKey] = id
	if fp != "" {
		out[agent.SessionFingerprintKey] = fp
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

package resolve

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

const (
	cc   = "claude_code"
	idK  = agent.SessionIDKey
	fpK  = agent.SessionFingerprintKey
	bkK  = agent.BackendKey
	real = "sess-real"
)

func persistNode(id string) graph.Node {
	return graph.Node{ID: id, Kind: graph.KindAgent, Backend: cc, Session: graph.SessionPersist}
}

func out(id, b, fp string) map[string]any {
	m := map[string]any{"text": "hi"}
	if id != "" {
		m[idK] = id
	}
	if b != "" {
		m[bkK] = b
	}
	if fp != "" {
		m[fpK] = fp
	}
	return m
}

// TestResolve is ADR-089's resolution order, one row per rule or mandated
// test. "want" is the plan kind; the id and fingerprint are what the visit
// would resume with.
func TestResolve(t *testing.T) {
	type want struct {
		kind     Kind
		id, fp   string
		ref, src string
	}
	cases := []struct {
		name string
		req  Request
		want want
	}{
		{
			name: "visit 1 with no inbound id runs fresh",
			req:  Request{Node: persistNode("w"), Backend: cc, Input: map[string]any{"topic": "x"}},
			want: want{kind: Fresh},
		},
		{
			name: "visit 2 resumes its own slot without any _session_id in with",
			req: Request{Node: persistNode("w"), Backend: cc, Input: map[string]any{},
				NodeSessions: map[string]runstore.NodeSessionSlot{"w": {Backend: cc, SessionID: "s1", Fingerprint: "fp1", StateRef: "r/w/1"}}},
			want: want{kind: UnpackOwnSlot, id: "s1", fp: "fp1", ref: "r/w/1"},
		},
		{
			name: "visit 2 with a conflicting inbound id: own slot wins, id and fingerprint from the slot",
			req: Request{Node: persistNode("w"), Backend: cc,
				Input:        map[string]any{idK: "sess-other", fpK: "fp-other"},
				Deliveries:   []Delivery{{From: "j", SessionID: "sess-other"}},
				Outputs:      map[string]map[string]any{"j": out("sess-other", cc, "fp-other")},
				NodeSessions: map[string]runstore.NodeSessionSlot{"w": {Backend: cc, SessionID: "s1", Fingerprint: "fp1", StateRef: "r/w/1"}}},
			want: want{kind: UnpackOwnSlot, id: "s1", fp: "fp1", ref: "r/w/1"},
		},
		{
			name: "a slot of another backend is not this node's conversation",
			req: Request{Node: persistNode("w"), Backend: cc, Input: map[string]any{},
				NodeSessions: map[string]runstore.NodeSessionSlot{"w": {Backend: "codex", SessionID: "s1", StateRef: "r/w/1"}}},
			want: want{kind: Fresh},
		},
		{
			name: "an empty StateRef is not a slot",
			req: Request{Node: persistNode("w"), Backend: cc, Input: map[string]any{},
				NodeSessions: map[string]runstore.NodeSessionSlot{"w": {Backend: cc, SessionID: "s1"}}},
			want: want{kind: Fresh},
		},
		{
			name: "inbound id, one stamp-eligible source with a slot: unpack it, fingerprint from the slot",
			req: Request{Node: persistNode("w"), Backend: cc,
				Input:        map[string]any{idK: real, fpK: "fp-inbound"},
				Deliveries:   []Delivery{{From: "src", SessionID: real}},
				Outputs:      map[string]map[string]any{"src": out(real, cc, "fp-out")},
				NodeSessions: map[string]runstore.NodeSessionSlot{"src": {Backend: cc, SessionID: real, Fingerprint: "fp-slot", StateRef: "r/src/1"}}},
			want: want{kind: UnpackSourceSlot, id: real, fp: "fp-slot", ref: "r/src/1", src: "src"},
		},
		{
			name: "inbound id, eligible source, no slot: has-session with the fingerprint from the source output, not the inbound one",
			req: Request{Node: persistNode("w"), Backend: cc,
				Input:      map[string]any{idK: real, fpK: "fp-contradicting"},
				Deliveries: []Delivery{{From: "src", SessionID: real}},
				Outputs:    map[string]map[string]any{"src": out(real, cc, "fp-out")}},
			want: want{kind: HasSession, id: real, fp: "fp-out", src: "src"},
		},
		{
			name: "has-session path with no fingerprint stamp: empty fingerprint",
			req: Request{Node: persistNode("w"), Backend: cc,
				Input:      map[string]any{idK: real, fpK: "fp-inbound"},
				Deliveries: []Delivery{{From: "src", SessionID: real}},
				Outputs:    map[string]map[string]any{"src": out(real, cc, "")}},
			want: want{kind: HasSession, id: real, fp: "", src: "src"},
		},
		{
			name: "source output sess-real, edge injects literal sess-other: fresh (even if sess-other is on disk)",
			req: Request{Node: persistNode("w"), Backend: cc,
				Input:      map[string]any{idK: "sess-other"},
				Deliveries: []Delivery{{From: "src", SessionID: "sess-other"}},
				Outputs:    map[string]map[string]any{"src": out(real, cc, "fp")}},
			want: want{kind: Fresh},
		},
		{
			name: "literal _session_id in with and the source output has no id: fresh",
			req: Request{Node: persistNode("w"), Backend: cc,
				Input:      map[string]any{idK: "sess-lit"},
				Deliveries: []Delivery{{From: "src", SessionID: "sess-lit"}},
				Outputs:    map[string]map[string]any{"src": out("", cc, "")}},
			want: want{kind: Fresh},
		},
		{
			name: "source stamped by another backend is not eligible",
			req: Request{Node: persistNode("w"), Backend: cc,
				Input:      map[string]any{idK: real},
				Deliveries: []Delivery{{From: "src", SessionID: real}},
				Outputs:    map[string]map[string]any{"src": out(real, "codex", "")}},
			want: want{kind: Fresh},
		},
		{
			name: "inbound id matches two stamp-eligible sources: fresh, no guess",
			req: Request{Node: persistNode("w"), Backend: cc,
				Input:      map[string]any{idK: real},
				Deliveries: []Delivery{{From: "a", SessionID: real}, {From: "b", SessionID: real}},
				Outputs:    map[string]map[string]any{"a": out(real, cc, "fa"), "b": out(real, cc, "fb")}},
			want: want{kind: Fresh},
		},
		{
			name: "an id no edge delivered is not provenance",
			req: Request{Node: persistNode("w"), Backend: cc,
				Input:   map[string]any{idK: real},
				Outputs: map[string]map[string]any{"src": out(real, cc, "")}},
			want: want{kind: Fresh},
		},
		{
			name: "kimi has no persist capability: strip and fresh",
			req: Request{Node: graph.Node{ID: "w", Kind: graph.KindAgent, Backend: "kimi", Session: graph.SessionPersist}, Backend: "kimi",
				Input:        map[string]any{idK: real},
				NodeSessions: map[string]runstore.NodeSessionSlot{"w": {Backend: "kimi", SessionID: "s", StateRef: "r"}}},
			want: want{kind: Fresh},
		},
		{
			name: "grok has no persist capability: strip and fresh",
			req:  Request{Node: graph.Node{ID: "w", Kind: graph.KindAgent, Backend: "grok", Session: graph.SessionPersist}, Backend: "grok", Input: map[string]any{idK: real}},
			want: want{kind: Fresh},
		},
		{
			name: "answered ask_user resumes the pause ref, not the node's own slot",
			req: Request{Node: persistNode("w"), Backend: cc, Answering: true, Input: map[string]any{},
				Pause:        &runstore.PauseInfo{NodeID: "w", Backend: cc, SessionID: "s2", Fingerprint: "fp2", BackendSessionStateRef: "r/w/pause/2"},
				NodeSessions: map[string]runstore.NodeSessionSlot{"w": {Backend: cc, SessionID: "s1", StateRef: "r/w/1"}}},
			want: want{kind: UnpackPause, id: "s2", fp: "fp2", ref: "r/w/pause/2"},
		},
		{
			name: "answered ask_user whose Put failed: fresh, never the completed slot",
			req: Request{Node: persistNode("w"), Backend: cc, Answering: true, Input: map[string]any{},
				Pause:        &runstore.PauseInfo{NodeID: "w", Backend: cc, SessionID: "s2"},
				NodeSessions: map[string]runstore.NodeSessionSlot{"w": {Backend: cc, SessionID: "s1", StateRef: "r/w/1"}}},
			want: want{kind: Fresh},
		},
		{
			name: "session: fresh ignores an inbound id",
			req: Request{Node: graph.Node{ID: "w", Kind: graph.KindAgent, Backend: cc}, Backend: cc,
				Input:      map[string]any{idK: real},
				Deliveries: []Delivery{{From: "src", SessionID: real}},
				Outputs:    map[string]map[string]any{"src": out(real, cc, "")}},
			want: want{kind: Fresh},
		},
		{
			name: "session: inherit takes a provable inbound id",
			req: Request{Node: graph.Node{ID: "w", Kind: graph.KindAgent, Backend: cc, Session: graph.SessionInherit}, Backend: cc,
				Input:      map[string]any{idK: real},
				Deliveries: []Delivery{{From: "src", SessionID: real}},
				Outputs:    map[string]map[string]any{"src": out(real, cc, "f")}},
			want: want{kind: HasSession, id: real, fp: "f", src: "src"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Resolve(tc.req)
			assert.Equal(t, tc.want.kind.String(), p.Kind.String(), p.Reason)
			assert.Equal(t, tc.want.id, p.SessionID)
			assert.Equal(t, tc.want.fp, p.Fingerprint)
			assert.Equal(t, tc.want.ref, p.StateRef)
			assert.Equal(t, tc.want.src, p.Source)
			// Stripped never carries a session key; a fresh plan's input is
			// the stripped one.
			assert.NotContains(t, p.Stripped, idK)
			assert.NotContains(t, p.Stripped, fpK)
			if p.Kind == Fresh {
				assert.Equal(t, p.Stripped, p.Input)
			} else {
				assert.Equal(t, tc.want.id, p.Input[idK])
				if tc.want.fp == "" {
					assert.NotContains(t, p.Input, fpK)
				} else {
					assert.Equal(t, tc.want.fp, p.Input[fpK])
				}
			}
			// Resolve never edits its input.
			if id, ok := tc.req.Input[idK]; ok {
				assert.NotEmpty(t, id)
			}
		})
	}
}

func TestStripRemovesTransientKeys(t *testing.T) {
	in := map[string]any{idK: "a", fpK: "b", agent.SessionStateKey: "c", agent.SessionStateBlobKey: []byte("d"), "x": 1}
	assert.Equal(t, map[string]any{"x": 1}, strip(in))
	assert.Len(t, in, 5)
}

// Every kind has its own name in logs and in the visit request; a value
// outside the kinds is "unknown", never a neighbour's name or a panic.
func TestKindNames(t *testing.T) {
	for k, name := range map[Kind]string{Fresh: "fresh", UnpackPause: "unpack_pause", UnpackOwnSlot: "unpack_own_slot", UnpackSourceSlot: "unpack_source_slot", HasSession: "has_session"} {
		assert.Equal(t, name, k.String())
	}
	assert.Equal(t, "unknown", Kind(-1).String())
	assert.Equal(t, "unknown", Kind(len(kindNames)).String())
}

// The fresh plan says which provenance rule refused the inbound id: no
// eligible source, or more than one.
func TestFreshSaysWhichSourceRuleFailed(t *testing.T) {
	req := Request{Node: persistNode("w"), Backend: cc, Input: map[string]any{idK: real},
		Deliveries: []Delivery{{From: "a", SessionID: real}, {From: "b", SessionID: real}},
		Outputs:    map[string]map[string]any{"a": out(real, cc, ""), "b": out(real, cc, "")}}
	p := Resolve(req)
	assert.Equal(t, Fresh, p.Kind)
	assert.Contains(t, p.Reason, "more than one source")
	req.Outputs = map[string]map[string]any{"a": out("other", cc, ""), "b": out("other", cc, "")}
	p = Resolve(req)
	assert.Equal(t, Fresh, p.Kind)
	assert.Contains(t, p.Reason, "no stamp-eligible source")
}

// A fork node continues a copy of the inbound conversation (from the
// source's slot or the live root); persist and inherit continue it as is.
// Either way the plan's input keeps the visit's other keys.
func TestForkIsMarkedOnInboundPlans(t *testing.T) {
	for _, mode := range []graph.SessionMode{graph.SessionFork, graph.SessionInherit, graph.SessionPersist} {
		node := graph.Node{ID: "w", Kind: graph.KindAgent, Backend: cc, Session: mode}
		req := Request{Node: node, Backend: cc, Input: map[string]any{idK: real, "topic": "x"},
			Deliveries: []Delivery{{From: "src", SessionID: real}},
			Outputs:    map[string]map[string]any{"src": out(real, cc, "f")}}
		p := Resolve(req)
		assert.Equal(t, HasSession, p.Kind, "%s: %s", mode, p.Reason)
		assert.Equal(t, mode == graph.SessionFork, p.Fork, "%s: has-session plan", mode)
		assert.Equal(t, "x", p.Input["topic"], "%s", mode)

		req.NodeSessions = map[string]runstore.NodeSessionSlot{"src": {Backend: cc, SessionID: real, StateRef: "runs/r/sessions/src/01J00000000000000000000000"}}
		p = Resolve(req)
		assert.Equal(t, UnpackSourceSlot, p.Kind, "%s: %s", mode, p.Reason)
		assert.Equal(t, mode == graph.SessionFork, p.Fork, "%s: source-slot plan", mode)
		assert.Equal(t, "x", p.Input["topic"], "%s", mode)
	}
}

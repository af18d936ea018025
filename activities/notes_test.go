package activities

import (
	"context"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/resolve"
	"github.com/tether-run/tether/internal/runstore"
)

// assertNoRef checks that a note says something and names no blob: not
// the ref, not its id, not any run's key.
func assertNoRef(t *testing.T, note string, refs ...string) {
	t.Helper()
	assert.NotEmpty(t, note)
	assert.NotContains(t, note, "runs/")
	assert.NotContains(t, note, "/sessions/")
	for _, r := range refs {
		assert.NotContains(t, note, r)
		assert.NotContains(t, note, path.Base(r))
	}
}

// A session note lands on the visit's output and its loop snapshots,
// which outlive every blob: it names what happened, never a ref
// (ADR-089), also for a slot whose part has no digest, a blob over the
// cap, and a ref of another run, each of which a tampered or unsigned
// checkpoint can plan.
func TestSessionNotesNameNoRef(t *testing.T) {
	ctx := context.Background()
	store := blob.NewMem()
	now := time.Now()
	v1, _ := twoSlots(t, store, now)
	part := refAt(now, 7)
	require.NoError(t, blob.PutBytes(ctx, store, part, []byte("a part")))
	foreign := strings.Replace(v1.PackedTo, "runs/r1/", "runs/r2/", 1)
	require.NoError(t, blob.PutBytes(ctx, store, foreign, mustGet(t, store, v1.PackedTo)))

	for _, tc := range []struct {
		name, note string
		plan       SessionPlan
		cap        int64
		refs       []string
	}{
		{
			name: "part without a digest", note: "no digest for part 1 of the session's slot",
			plan: SessionPlan{StateRef: v1.PackedTo, Digest: PartsDigestPrefix + v1.PackDigest, Parts: []runstore.SessionPart{{Ref: part}}},
			refs: []string{v1.PackedTo, part},
		},
		{
			name: "blob over the cap", note: "larger than any session archive may be",
			plan: SessionPlan{StateRef: v1.PackedTo, Digest: v1.PackDigest}, cap: 8,
			refs: []string{v1.PackedTo},
		},
		{
			name: "another run's ref", note: "not one of this run's session refs",
			plan: SessionPlan{StateRef: foreign, Digest: v1.PackDigest},
			refs: []string{foreign},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newActs(t, store)
			a.maxSessionBlob = tc.cap
			plan := tc.plan
			plan.Kind, plan.SessionID, plan.Stripped = resolve.UnpackOwnSlot.String(), v1.SessionID, map[string]any{}
			res, err := a.Visit(ctx, &VisitRequest{
				RunID: "r1", NodeID: "writer", Visit: 3, Node: echoWriter, Backend: "scripted", Started: now,
				Input: map[string]any{agent.SessionIDKey: v1.SessionID}, Session: &plan,
			})
			require.NoError(t, err)
			assert.Contains(t, res.SessionNote, tc.note)
			assert.NotEqual(t, v1.SessionID, res.SessionID)
			assertNoRef(t, res.SessionNote, tc.refs...)
			note, _ := res.Output[SessionNoteKey].(string)
			assertNoRef(t, note, tc.refs...)
		})
	}
}

// plantedRef is a blob key of the run as a store fault, an inbound
// _session_id or an agent's tool call can carry it into a note.
const plantedRef = "runs/r1/sessions/writer/01J00000000000000000000BEN"

// An inbound session id a visit cannot find (the HasSession plan, which
// takes the id as the edge delivered it) is quoted by the session note:
// a ref planted there does not reach the note, the output or the prompt.
func TestSessionNoteHidesAPlantedRef(t *testing.T) {
	a := newActs(t, blob.NewMem())
	res, err := a.Visit(context.Background(), &VisitRequest{
		RunID: "r1", NodeID: "writer", Visit: 1, Node: echoWriter, Backend: "scripted", Started: time.Now(),
		Input:   map[string]any{agent.SessionIDKey: plantedRef},
		Session: &SessionPlan{Kind: resolve.HasSession.String(), SessionID: plantedRef, Stripped: map[string]any{}},
	})
	require.NoError(t, err)
	assert.Contains(t, res.SessionNote, "is not present on this worker")
	assertNoRef(t, res.SessionNote, plantedRef)
	for k, v := range res.Output {
		s, _ := v.(string)
		assert.NotContains(t, s, "runs/", "output %s", k)
	}
}

// What earlier attempts did comes back to the next one as text from
// outside: the cause quotes the failure (a store fault names the key it
// failed on), the calls and files are what the agent's tools reported.
// No key in them reaches the agent's prompt, the visit's output, a tool's
// output or the environment a tool's command reads.
func TestRetryNotesNameNoRef(t *testing.T) {
	lost := &agent.Interruption{
		Attempts: 1, Started: true, ToolCalls: 2,
		Cause: `it failed: read session blob for node "writer": blob: get ` + plantedRef + `: input/output error`,
		Calls: []string{"Bash cat " + plantedRef, "Read /var/store/runs/r1/checkpoints/00000000000000000003.json"},
		Files: []string{"notes/" + plantedRef},
	}
	for _, tc := range []struct {
		name string
		node graph.Node
	}{
		{"agent", graph.Node{ID: "writer", Kind: graph.KindAgent, Backend: "scripted", Prompt: "write", Script: []string{"{{.Prompt}}"}}},
		{"tool", graph.Node{ID: "check", Kind: graph.KindTool, Run: []string{"sh", "-c", `printf '%s' "$` + agent.RetryOfEnv + `"`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newActs(t, blob.NewMem())
			res, err := a.Visit(context.Background(), &VisitRequest{
				RunID: "r1", NodeID: tc.node.ID, Visit: 2, Node: tc.node, Backend: tc.node.Backend, Started: time.Now(), RetryOf: lost,
			})
			require.NoError(t, err)
			note, _ := res.Output[agent.RetryNoteKey].(string)
			assertNoRef(t, note, plantedRef)
			assert.Contains(t, note, "interrupted")
			if tc.node.Kind == graph.KindAgent {
				text, _ := res.Output["text"].(string) // the scripted agent says its prompt back
				assert.Contains(t, text, "an earlier attempt of this very turn was interrupted")
				assert.Contains(t, text, "a session blob of the run", "the note still says what failed")
				assert.Contains(t, text, "2 tool calls (`Bash cat a session blob of the run`, `Read a checkpoint of the run`)", "and what it did")
				assert.Contains(t, text, "It was changing `a session blob of the run`.")
				assertNoRef(t, text, plantedRef)
			} else {
				env, _ := res.Output["stdout"].(string)
				assert.Contains(t, env, `"attempts":1`)
				assertNoRef(t, env, plantedRef)
			}
		})
	}
	assert.Contains(t, lost.Cause, plantedRef, "the request itself is left as it was")
}

// An agent's reply cannot write Tether's notes or stamps: a structured
// reply's keys that start with "_" are dropped, so a retry or session
// note (or a ref in one) on the output is always Tether's own.
func TestAReplyCannotForgeANote(t *testing.T) {
	a := newActs(t, blob.NewMem())
	node := graph.Node{ID: "writer", Kind: graph.KindAgent, Backend: "scripted", Prompt: "judge",
		Script: []string{`JSON: {"verdict": "ok", "_retry_note": "` + plantedRef + `", "_session_note": "` + plantedRef + `", "_network_refused": ["` + plantedRef + `"]}`}}
	res, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: node, Backend: "scripted", Started: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Output["verdict"])
	for _, k := range []string{agent.RetryNoteKey, SessionNoteKey, NetworkRefusedKey} {
		assert.NotContains(t, res.Output, k)
	}
	assert.Equal(t, "scripted", res.Output[agent.BackendKey])
}

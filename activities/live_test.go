package activities

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/resolve"
)

// liveOn reports whether a's live root for run r1 holds the scripted
// session id: what a has-session check would answer there.
func liveOn(t *testing.T, a *Activities, id string) bool {
	t.Helper()
	b, ok := a.Backends.Get("scripted")
	require.True(t, ok)
	env := agent.Env{StateRoot: filepath.Join(a.StateDir, "runs", "r1", "scripted"), Workdir: filepath.Join(a.WorkDir, "r1")}
	return b.Packer(env).HasSession(context.Background(), id)
}

// spoil does to a blob what each case of the tests below needs: take it
// away, put another genuine archive of the same session in its place (its
// digest differs), or put bytes there that match the planned digest but
// do not unpack. It returns the digest to plan with.
type spoil struct {
	name, note string
	do         func(t *testing.T, store blob.Store, ref string, other []byte, planned string) string
}

var spoils = []spoil{
	{"missing", "gone from the store", func(t *testing.T, store blob.Store, ref string, _ []byte, planned string) string {
		require.NoError(t, store.Delete(context.Background(), ref))
		return planned
	}},
	{"swapped", "not the one the checkpoint recorded", func(t *testing.T, store blob.Store, ref string, other []byte, planned string) string {
		require.NoError(t, blob.PutBytes(context.Background(), store, ref, other))
		return planned
	}},
	{"does not unpack", "cannot be unpacked", func(t *testing.T, store blob.Store, ref string, _ []byte, _ string) string {
		garbage := []byte("not a session archive")
		require.NoError(t, blob.PutBytes(context.Background(), store, ref, garbage))
		return digestOf(garbage)
	}},
}

// ADR-089 rows 19 and 20 on the worker that still holds the session live
// (same worker, same root): a planned slot whose blob is missing, swapped
// or does not unpack is never resumed through the live session (no
// fall-through to has-session). Here the plan names visit 1's slot (a
// rewind), while the worker's live session has moved on to visit 2's: the
// visit runs fresh, with the session keys stripped, and says why.
func TestRefusedSlotRunsFreshOnTheWorkerThatHoldsTheSession(t *testing.T) {
	for _, sp := range spoils {
		t.Run(sp.name, func(t *testing.T) {
			store := blob.NewMem()
			a := newActs(t, store)
			now := time.Now()
			v1, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: echoWriter, Backend: "scripted", PackTo: refAt(now, 1), Started: now})
			require.NoError(t, err)
			v2, err := a.Visit(context.Background(), &VisitRequest{
				RunID: "r1", NodeID: "writer", Visit: 2, Node: echoWriter, Backend: "scripted", Started: now, PackTo: refAt(now, 2),
				Session: &SessionPlan{Kind: resolve.UnpackOwnSlot.String(), SessionID: v1.SessionID, StateRef: v1.PackedTo, Digest: v1.PackDigest},
			})
			require.NoError(t, err)
			require.Equal(t, v1.SessionID, v2.SessionID)
			digest := sp.do(t, store, v1.PackedTo, mustGet(t, store, v2.PackedTo), v1.PackDigest)
			require.True(t, liveOn(t, a, v1.SessionID), "the worker still holds the session live")

			res, err := a.Visit(context.Background(), &VisitRequest{
				RunID: "r1", NodeID: "writer", Visit: 2, Node: echoWriter, Backend: "scripted", Started: now,
				Input:   map[string]any{agent.SessionIDKey: v1.SessionID, agent.SessionFingerprintKey: v1.Fingerprint, "topic": "x"},
				Session: &SessionPlan{Kind: resolve.UnpackOwnSlot.String(), SessionID: v1.SessionID, Fingerprint: v1.Fingerprint, StateRef: v1.PackedTo, Digest: digest, Stripped: map[string]any{"topic": "x"}},
			})
			require.NoError(t, err)
			assert.Contains(t, res.SessionNote, sp.note)
			assert.Equal(t, res.SessionNote, res.Output[SessionNoteKey], "the output says why")
			assert.NotEqual(t, v1.SessionID, res.SessionID, "the live session is not resumed")
			assert.Equal(t, "visit 2 id=[] fp=[]", res.Output["text"], "no session keys reached the visit")
		})
	}
}

// asksTwice asks on its first turn and again on its second; the third
// says it is done. A fresh conversation told a lost answer (a long
// prompt) says so instead. The prompt shows the session keys.
var asksTwice = graph.Node{
	ID: "writer", Kind: graph.KindAgent, Backend: "scripted", Session: graph.SessionPersist,
	Prompt: `pick id=[{{with index .input "_session_id"}}{{.}}{{end}}] fp=[{{with index .input "_session_fingerprint"}}{{.}}{{end}}]`,
	Script: []string{
		`{{if gt (len .Prompt) 60}}turn {{.Turn}}: fresh, told {{.Prompt}}{{else}}ASK: first?{{end}}`,
		`ASK: second?`,
		`turn {{.Turn}}: done`,
	},
}

// The same for a pause blob: the writer asked twice on this worker (pause
// blobs A, then B); a plan to answer from A (a run resumed from the
// checkpoint that named A) finds A missing, swapped or not unpacking. The
// worker still holds the session, now at B: the answer goes to a fresh
// conversation's prompt, never to the live session.
func TestRefusedPauseBlobRunsFreshOnTheWorkerThatHoldsTheSession(t *testing.T) {
	for _, sp := range spoils {
		t.Run(sp.name, func(t *testing.T) {
			store := blob.NewMem()
			a := newActs(t, store)
			now := time.Now()
			refA, refB := pauseRef(now, 1), pauseRef(now, 2)
			first, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: asksTwice, Backend: "scripted", PauseTo: refA, Started: now})
			require.NoError(t, err)
			require.Len(t, first.Questions, 1)
			second, err := a.Visit(context.Background(), &VisitRequest{
				RunID: "r1", NodeID: "writer", Visit: 1, Node: asksTwice, Backend: "scripted", PauseTo: refB, Started: now,
				Session: &SessionPlan{Kind: resolve.UnpackPause.String(), SessionID: first.SessionID, StateRef: refA, Digest: first.PackDigest},
				Answer:  &agent.Answer{Text: "one"},
			})
			require.NoError(t, err)
			require.Len(t, second.Questions, 1, "the live session asked again")
			require.Equal(t, first.SessionID, second.SessionID)
			digest := sp.do(t, store, refA, mustGet(t, store, refB), first.PackDigest)
			require.True(t, liveOn(t, a, first.SessionID), "the worker still holds the session live")

			res, err := a.Visit(context.Background(), &VisitRequest{
				RunID: "r1", NodeID: "writer", Visit: 1, Node: asksTwice, Backend: "scripted", Started: now,
				Input:   map[string]any{agent.SessionIDKey: first.SessionID, agent.SessionFingerprintKey: first.Fingerprint},
				Session: &SessionPlan{Kind: resolve.UnpackPause.String(), SessionID: first.SessionID, Fingerprint: first.Fingerprint, StateRef: refA, Digest: digest, Stripped: map[string]any{}},
				Answer:  &agent.Answer{Text: "teal"},
			})
			require.NoError(t, err)
			assert.Contains(t, res.SessionNote, sp.note)
			assert.NotEqual(t, first.SessionID, res.SessionID, "the live session is not resumed")
			assert.Empty(t, res.Questions)
			text, _ := res.Output["text"].(string)
			assert.Contains(t, text, "turn 1: fresh, told pick id=[] fp=[]", "no session keys reached the visit")
			assert.Contains(t, text, LostAnswerIntro+"\nteal", "the answer is not lost")
		})
	}
}

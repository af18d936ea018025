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

// Whatever a note quotes (an unpack error can quote an untrusted
// archive), a blob key in it does not survive.
func TestWithoutRefs(t *testing.T) {
	for in, want := range map[string]string{
		"cannot unpack runs/r1/sessions/w/01J00000000000000000000000: bad": "cannot unpack (a blob): bad",
		`entry "x/sessions/y/z" escapes`:                                   `entry "(a blob)" escapes`,
		"key runs/r2/workspace/abc.pack and runs/r1/sessions/w/pause/01J":  "key (a blob) and (a blob)",
		"the session's blob is gone from the store":                        "the session's blob is gone from the store",
		"ran 3 reruns/of it":                                               "ran 3 reruns/of it",
	} {
		assert.Equal(t, want, withoutRefs(in), in)
	}
}

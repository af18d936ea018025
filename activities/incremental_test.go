package activities

import (
	"context"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	sessionpack "github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/runstore"
)

// incrementalVisit runs visit n of the writer on a, resuming slot (none
// for the first visit), incrementally, and returns the result and the
// slot the workflow would commit from it.
func incrementalVisit(t *testing.T, a *Activities, n int, slot runstore.NodeSessionSlot, now time.Time) (*VisitResult, runstore.NodeSessionSlot) {
	t.Helper()
	req := &VisitRequest{RunID: "r1", NodeID: "writer", Visit: n, Node: padWriter, Backend: "scripted",
		PackTo: refAt(now, byte(n)), Started: now, Incremental: true}
	if slot.StateRef != "" {
		req.Session = &SessionPlan{Kind: "unpack_own_slot", SessionID: slot.SessionID, StateRef: slot.StateRef,
			Digest: slot.Digest, Size: slot.Size, Parts: slot.Parts, Stripped: map[string]any{}}
		if len(slot.Parts) > 0 {
			req.Session.Digest = PartsDigestPrefix + slot.Digest // as the workflow sends it
		}
	}
	res, err := a.Visit(context.Background(), req)
	require.NoError(t, err)
	require.True(t, res.Packed, res.PackError)
	require.Empty(t, res.SessionNote)
	next := runstore.NodeSessionSlot{Backend: res.Backend, SessionID: res.SessionID, StateRef: res.PackedTo, Digest: res.PackDigest, Size: res.PackSize}
	if res.PackDeltaOf != "" {
		require.Equal(t, slot.LastDigest(), res.PackDeltaOf, "a part extends the slot the visit resumed")
		next.StateRef, next.Digest, next.Size = slot.StateRef, slot.Digest, slot.Size
		next.Parts = append(append([]runstore.SessionPart(nil), slot.Parts...), runstore.SessionPart{Ref: res.PackedTo, Digest: res.PackDigest, Size: res.PackSize})
	}
	return res, next
}

// padWriter's first prompt carries 8 KB that do not compress, so that its
// slot's base outweighs the parts of the visits after it.
var padWriter = func() graph.Node {
	n := echoWriter
	pad := make([]byte, 4<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range pad {
		pad[i] = byte(rng.Uint32())
	}
	n.Prompt = "{{if eq .visit 1}}" + hex.EncodeToString(pad) + " {{end}}" + n.Prompt
	n.Script = []string{"turn {{.Turn}}"}
	return n
}()

// On one worker and across workers with empty roots, an incremental run's
// slot grows by a part per visit, and each visit continues the whole
// conversation from the base and every part.
func TestIncrementalSlotGrowsAndRestores(t *testing.T) {
	store := blob.NewMem()
	now := time.Now()
	a := newActs(t, store)
	res, slot := incrementalVisit(t, a, 1, runstore.NodeSessionSlot{}, now)
	assert.Empty(t, res.PackDeltaOf, "the first visit packs the whole session")
	res, slot = incrementalVisit(t, a, 2, slot, now)
	require.NotEmpty(t, res.PackDeltaOf, "the same worker, holding the slot, packs a part")
	require.Len(t, slot.Parts, 1)

	// A worker with an empty root restores the base and the part.
	b := newActs(t, store)
	res, slot = incrementalVisit(t, b, 3, slot, now)
	assert.Equal(t, "turn 3", res.Output["text"])
	require.Len(t, slot.Parts, 2)
	// And another one, the base and both parts.
	res, slot = incrementalVisit(t, newActs(t, store), 4, slot, now)
	assert.Equal(t, "turn 4", res.Output["text"])
	require.Len(t, slot.Parts, 3)

	// A worker built before slots had parts checks the base against the
	// plan's Digest and nothing else: the prefix makes it refuse, so it
	// never resumes the base without its parts.
	base, err := store.Get(context.Background(), slot.StateRef)
	require.NoError(t, err)
	data, err := io.ReadAll(base)
	require.NoError(t, err)
	require.NoError(t, base.Close())
	assert.Empty(t, checkSessionBlob("r1", slot.StateRef, slot.Digest, data), "the base itself is sound")
	assert.Contains(t, checkSessionBlob("r1", slot.StateRef, PartsDigestPrefix+slot.Digest, data), "not the one the checkpoint recorded",
		"what an old worker's check makes of a slot with parts")

	// A part that is not the one the slot recorded is refused: the visit
	// runs fresh, never on a conversation it cannot prove.
	{
		bad := slot
		bad.Parts = append([]runstore.SessionPart(nil), slot.Parts...)
		bad.Parts[len(bad.Parts)-1].Digest = "sha256:" + strings.Repeat("0", 64)
		c := newActs(t, store)
		r, err := c.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 5, Node: padWriter, Backend: "scripted",
			PackTo: refAt(now, 5), Started: now, Incremental: true,
			Session: &SessionPlan{Kind: "unpack_own_slot", SessionID: bad.SessionID, StateRef: bad.StateRef, Digest: bad.Digest, Parts: bad.Parts, Stripped: map[string]any{}}})
		require.NoError(t, err)
		assert.Contains(t, r.SessionNote, "not the one the checkpoint recorded")
		assert.Empty(t, r.PackDeltaOf, "a fresh conversation packs whole")
		assert.Equal(t, "turn 1", r.Output["text"])
	}
}

func TestSlotPartsGrowWithTheBase(t *testing.T) {
	for base, want := range map[int64]int{0: minSlotParts, 200 << 10: minSlotParts, 2 << 20: 32, 15 << 20: maxSlotParts} {
		assert.Equal(t, want, slotParts(base), "base of %d bytes", base)
	}
	x := &extension{manifest: &sessionpack.Manifest{}, last: "d", parts: minSlotParts, baseBytes: 200 << 10, partBytes: 10 << 10}
	assert.True(t, x.whole(), "a small session rebases at the floor")
	x.baseBytes = 15 << 20
	assert.False(t, x.whole(), "a large one keeps adding parts")
}

package conversation_test

import (
	"context"
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/scripted"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/catalogue/transcripts"
	"github.com/tether-run/tether/internal/conversation"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/packer/archive"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/transcript"
)

const run, node = "run-conv", "writer"

// scriptedSlot runs three visits of the scripted agent (a prompt that
// makes it ask the user, the answer, a second prompt), packs the session
// whole after the first and as a delta after the last, puts both in a
// store, and returns the checkpoint slot naming them.
func scriptedSlot(t *testing.T, store blob.Store) runstore.NodeSessionSlot {
	t.Helper()
	ctx := context.Background()
	b := scripted.New(scripted.Options{})
	env := agent.Env{StateRoot: t.TempDir(), Workdir: t.TempDir()}
	script := []string{"ASK: which colour?", "painted it {{.Prompt}}", "turn {{.Turn}}: {{.Prompt}}"}
	asked, err := b.Execute(ctx, agent.Request{Prompt: "paint the shed", Script: script, Env: env})
	require.NoError(t, err)
	require.NotNil(t, asked.NeedsInteraction)
	pk := b.Packer(env).(interface {
		PackDelta(ctx context.Context, id string, base *packer.Manifest) ([]byte, *packer.Manifest, error)
	})
	base, m, err := pk.PackDelta(ctx, asked.SessionID, nil)
	require.NoError(t, err)
	_, err = b.Execute(ctx, agent.Request{SessionID: asked.SessionID, Script: script, Env: env,
		Answer: &agent.Answer{QuestionID: "q1", Text: "blue", PendingToolUseID: asked.NeedsInteraction.PendingToolUseID}})
	require.NoError(t, err)
	_, err = b.Execute(ctx, agent.Request{Prompt: "and the door", SessionID: asked.SessionID, Script: script, Env: env})
	require.NoError(t, err)
	delta, _, err := pk.PackDelta(ctx, asked.SessionID, m)
	require.NoError(t, err)
	h, err := archive.ReadHeader(delta)
	require.NoError(t, err)
	require.Equal(t, archive.KindDelta, h.Kind)

	slot := runstore.NodeSessionSlot{Backend: b.Name(), SessionID: asked.SessionID}
	for i, data := range [][]byte{base, delta} {
		ref := runstore.SessionKey(run, node, ulid.Make().String())
		require.NoError(t, blob.PutBytes(ctx, store, ref, data))
		if i == 0 {
			slot.StateRef, slot.Digest, slot.Size = ref, archive.Digest(data), int64(len(data))
			continue
		}
		slot.Parts = append(slot.Parts, runstore.SessionPart{Ref: ref, Digest: archive.Digest(data), Size: int64(len(data))})
	}
	return slot
}

func TestReadsAScriptedConversationAcrossParts(t *testing.T) {
	store := blob.NewMem()
	slot := scriptedSlot(t, store)
	page, err := conversation.Read(context.Background(), transcripts.Reader, conversation.FromSlot(store, run, slot), 0, 0, transcript.Limits{})
	require.NoError(t, err)
	assert.Equal(t, 0, page.Next)
	assert.Equal(t, slot.SessionID, page.SessionID)
	type row struct {
		Kind transcript.Kind
		Turn int
		Text string
		Tool string
	}
	var got []row
	for _, e := range page.Entries {
		got = append(got, row{e.Kind, e.Turn, e.Text, e.Tool})
	}
	assert.Equal(t, []row{
		{transcript.User, 1, "paint the shed", ""},
		{transcript.Assistant, 1, "ASK: which colour?", ""},
		{transcript.ToolCall, 1, "", "ask_user"},
		{transcript.Note, 1, "the turn ended: awaiting_input", ""},
		{transcript.ToolResult, 1, "blue", "ask_user"},
		{transcript.User, 2, "blue", ""},
		{transcript.Assistant, 2, "painted it blue", ""},
		{transcript.User, 3, "and the door", ""},
		{transcript.Assistant, 3, "turn 3: and the door", ""},
	}, got)
	call := page.Entries[2]
	assert.Contains(t, call.Input, "which colour?")
	assert.Equal(t, call.CallID, page.Entries[4].CallID)
}

// Pages of any size, read one after another, are the whole conversation.
func TestPagesJoinUpToTheWhole(t *testing.T) {
	store := blob.NewMem()
	src := conversation.FromSlot(store, run, scriptedSlot(t, store))
	whole, err := conversation.Read(context.Background(), transcripts.Reader, src, 0, 0, transcript.Limits{})
	require.NoError(t, err)
	for _, n := range []int{1, 2, 4} {
		var all []transcript.Entry
		for from, pages := 0, 0; ; pages++ {
			require.Less(t, pages, 20)
			p, err := conversation.Read(context.Background(), transcripts.Reader, src, from, n, transcript.Limits{})
			require.NoError(t, err)
			require.LessOrEqual(t, len(p.Entries), n)
			all = append(all, p.Entries...)
			if p.Next == 0 {
				break
			}
			from = p.Next
		}
		assert.Equal(t, whole.Entries, all, "pages of %d", n)
	}
}

func TestRefusesWhatItCannotTrust(t *testing.T) {
	ctx := context.Background()
	store := blob.NewMem()
	slot := scriptedSlot(t, store)
	read := func(s runstore.NodeSessionSlot, runID string) error {
		_, err := conversation.Read(ctx, transcripts.Reader, conversation.FromSlot(store, runID, s), 0, 0, transcript.Limits{})
		return err
	}
	swapped := slot
	swapped.Digest = archive.Digest([]byte("another blob"))
	assert.ErrorIs(t, read(swapped, run), archive.ErrDigestMismatch)

	noDigest := slot
	noDigest.Digest = ""
	assert.ErrorIs(t, read(noDigest, run), conversation.ErrUnchecked)
	assert.ErrorIs(t, read(slot, "another-run"), conversation.ErrUnchecked, "a ref of another run")

	gone := slot
	gone.StateRef = runstore.SessionKey(run, node, ulid.Make().String())
	assert.ErrorIs(t, read(gone, run), conversation.ErrGone)

	other := slot
	other.SessionID = "sc-01ARZ3NDEKTSV4RRFFQ69G5FAV"
	assert.ErrorIs(t, read(other, run), archive.ErrHeaderMismatch)

	unknown := slot
	unknown.Backend = "grok"
	assert.ErrorIs(t, read(unknown, run), conversation.ErrNoReader)
	none := func(string) (transcript.Reader, bool) { return transcript.Reader{}, false }
	_, err := conversation.Read(ctx, none, conversation.FromSlot(store, run, slot), 0, 0, transcript.Limits{})
	assert.ErrorIs(t, err, conversation.ErrNoReader, "the readers are the caller's")
	assert.ErrorIs(t, read(runstore.NodeSessionSlot{Backend: "scripted"}, run), conversation.ErrNoSession)

	deltaFirst := slot
	deltaFirst.StateRef, deltaFirst.Digest = slot.Parts[0].Ref, slot.Parts[0].Digest
	deltaFirst.Parts = nil
	assert.ErrorIs(t, read(deltaFirst, run), archive.ErrBrokenChain)

	_, err = conversation.Read(ctx, transcripts.Reader, conversation.FromSlot(store, run, slot), 0, 0, transcript.Limits{MaxBlobBytes: 64})
	assert.ErrorIs(t, err, archive.ErrTooLarge)
}

// A session longer than MaxSessionBytes shows what fits and says so.
func TestCutsALongSession(t *testing.T) {
	store := blob.NewMem()
	src := conversation.FromSlot(store, run, scriptedSlot(t, store))
	p, err := conversation.Read(context.Background(), transcripts.Reader, src, 0, 0, transcript.Limits{MaxSessionBytes: 300})
	require.NoError(t, err)
	assert.True(t, p.Cut)
	require.NotEmpty(t, p.Entries)
	assert.Equal(t, transcript.Note, p.Entries[len(p.Entries)-1].Kind)
	assert.Contains(t, p.Entries[len(p.Entries)-1].Text, "longer than 300 bytes")
}

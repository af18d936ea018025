package runstore

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
)

// A fork omits both kinds of session ref (ADR-089), and the slots kept for
// rewinds, and keeps the outputs, which never held a ref to begin with.
func TestForkOmitsRefs(t *testing.T) {
	src := &Checkpoint{
		RunID: "a", Seq: 7, Status: StatusFailed,
		Outputs:          map[string]map[string]any{"w": {"text": "hi", "_session_id": "s1"}},
		NodeSessions:     map[string]NodeSessionSlot{"w": {Backend: "pi", SessionID: "s1", StateRef: "runs/a/sessions/w/X"}},
		RetainedSessions: map[string][]string{"w": {"runs/a/sessions/w/W"}},
		Pause:            &PauseInfo{NodeID: "w", BackendSessionStateRef: "runs/a/sessions/w/pause/Y", Questions: []Question{{ID: "w-1-q1"}}},
	}
	cp := Fork(src)
	b, err := json.Marshal(cp)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "runs/a/sessions")
	assert.NotContains(t, string(b), "_session_state_ref")
	assert.Empty(t, cp.NodeSessions)
	assert.Empty(t, cp.RetainedSessions)
	assert.Equal(t, "w-1-q1", cp.Pause.Questions[0].ID)
	assert.Equal(t, &Lineage{Run: "a", Seq: 7, Kind: "fork"}, cp.Lineage)
	assert.Equal(t, int64(0), cp.Seq)
	assert.Equal(t, StatusRunning, cp.Status)
	// The source is untouched.
	assert.Equal(t, "runs/a/sessions/w/pause/Y", src.Pause.BackendSessionStateRef)
	assert.NotEmpty(t, src.NodeSessions)
}

// Rewind writes the new checkpoint first, then deletes exactly the blobs
// that only later checkpoints named, of every kind.
func TestRewindDropsOnlyLaterRefsAfterItsCheckpoint(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMem()
	store := New(mem)
	key := func(k string) string {
		require.NoError(t, blob.PutBytes(ctx, mem, k, []byte(k)))
		return k
	}
	d1, d2 := "1111111111111111111111111111111111111111111111111111111111111111", "2222222222222222222222222222222222222222222222222222222222222222"
	slot1, slot2 := key(SessionKey("r", "w", "01J00000000000000000000001")), key(SessionKey("r", "w", "01J00000000000000000000002"))
	pause2 := key(PauseKey("r", "w", "01J00000000000000000000003"))
	pack1, pack2 := key(WorkspacePackKey("r", d1)), key(WorkspacePackKey("r", d2))
	next := []Cursor{{Node: "w"}}
	cp1 := &Checkpoint{Seq: 1, Cursor: next, NodeSessions: map[string]NodeSessionSlot{"w": {Backend: "pi", SessionID: "s", StateRef: slot1}},
		Workspace: &WorkspaceState{Commit: "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1", Packs: []WorkspacePack{{Key: pack1}}}}
	cp2 := &Checkpoint{Seq: 2, Cursor: next, NodeSessions: map[string]NodeSessionSlot{"w": {Backend: "pi", SessionID: "s", StateRef: slot2}},
		RetainedSessions: map[string][]string{"w": {slot1}}, Pause: &PauseInfo{NodeID: "w", BackendSessionStateRef: pause2},
		Workspace: &WorkspaceState{Commit: "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2", Packs: []WorkspacePack{{Key: pack1}, {Key: pack2}}}}
	require.NoError(t, store.Save(ctx, "r", cp1))
	require.NoError(t, store.Save(ctx, "r", cp2))

	rep, err := store.Rewind(ctx, "r", 1)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{slot2, pause2, pack2}, rep.Dropped)
	assert.Empty(t, rep.Errors)
	assert.Equal(t, int64(3), rep.Checkpoint.Seq)
	assert.Equal(t, &Lineage{Run: "r", Seq: 1, Kind: "rewind", At: 3}, rep.Checkpoint.Lineage)
	latest, err := store.Latest(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, slot1, latest.NodeSessions["w"].StateRef)
	for _, k := range []string{slot1, pack1} {
		_, err := mem.Stat(ctx, k)
		assert.NoError(t, err, "%s is named by the target and stays", k)
	}
	for _, k := range []string{slot2, pause2, pack2} {
		_, err := mem.Stat(ctx, k)
		assert.ErrorIs(t, err, blob.ErrNotFound, "%s only later checkpoints named", k)
	}
}

// A rewind whose checkpoint cannot be written deletes nothing.
func TestRewindDeletesNothingWhenItsCheckpointFails(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMem()
	store := New(mem)
	slot2 := SessionKey("r", "w", "01J00000000000000000000002")
	require.NoError(t, blob.PutBytes(ctx, mem, slot2, []byte("x")))
	require.NoError(t, store.Save(ctx, "r", &Checkpoint{Seq: 1, Cursor: []Cursor{{Node: "w"}}}))
	require.NoError(t, store.Save(ctx, "r", &Checkpoint{Seq: 2, NodeSessions: map[string]NodeSessionSlot{"w": {StateRef: slot2}}}))
	// Seq 3 is taken by something else already: the save fails.
	require.NoError(t, blob.PutBytes(ctx, mem, checkpointKey("r", 3), []byte("{}")))
	_, err := store.Rewind(ctx, "r", 1)
	require.Error(t, err)
	_, err = mem.Stat(ctx, slot2)
	assert.NoError(t, err, "nothing is deleted before the rewind checkpoint is durable")
}

func TestCopyWorkspaceMovesPacksIntoTheNewRun(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMem()
	store := New(mem)
	d := "3333333333333333333333333333333333333333333333333333333333333333"
	src := WorkspacePackKey("a", d)
	require.NoError(t, blob.PutBytes(ctx, mem, src, []byte("pack")))
	st, err := store.CopyWorkspace(ctx, "a", "b", &WorkspaceState{Commit: "c", Packs: []WorkspacePack{{Key: src, Tip: "c", Size: 4}}})
	require.NoError(t, err)
	assert.Equal(t, WorkspacePackKey("b", d), st.Packs[0].Key)
	got, err := blob.GetBytes(ctx, mem, st.Packs[0].Key)
	require.NoError(t, err)
	assert.Equal(t, "pack", string(got))
	_, err = store.CopyWorkspace(ctx, "a", "b", &WorkspaceState{Packs: []WorkspacePack{{Key: "runs/x/workspace/" + d + ".pack"}}})
	assert.ErrorIs(t, err, ErrInvalidID, "a pack of another run is refused")
}

// A fork copies the run's workspace and every branch's, reading each pack
// of the source once though the states share it.
func TestCopyWorkspacesCopiesEachPackOnce(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMem()
	reads := map[string]int{}
	store := New(countingGets{Store: mem, n: reads})
	shared, own := strings.Repeat("1", 64), strings.Repeat("2", 64)
	for _, d := range []string{shared, own} {
		require.NoError(t, blob.PutBytes(ctx, mem, WorkspacePackKey("a", d), []byte("pack "+d[:1])))
	}
	pack := func(d string) WorkspacePack { return WorkspacePack{Key: WorkspacePackKey("a", d), Size: 6} }
	cp := &Checkpoint{
		Workspace: &WorkspaceState{Commit: "t", Packs: []WorkspacePack{pack(shared)}},
		Branches:  []BranchState{{Name: "x", Workspace: &WorkspaceState{Packs: []WorkspacePack{pack(shared), pack(own)}}}},
		Joined:    []BranchState{{Name: "y", Workspace: &WorkspaceState{Packs: []WorkspacePack{pack(shared)}}}},
	}
	require.NoError(t, store.CopyWorkspaces(ctx, "a", "b", cp))
	for _, st := range []*WorkspaceState{cp.Workspace, cp.Branches[0].Workspace, cp.Joined[0].Workspace} {
		for _, p := range st.Packs {
			d, err := WorkspacePackDigest("b", p.Key)
			require.NoError(t, err, "the fork names its own copy")
			got, err := blob.GetBytes(ctx, mem, p.Key)
			require.NoError(t, err)
			assert.Equal(t, "pack "+d[:1], string(got))
		}
	}
	assert.Equal(t, map[string]int{WorkspacePackKey("a", shared): 1, WorkspacePackKey("a", own): 1}, reads)
}

// countingGets counts the reads of each key.
type countingGets struct {
	blob.Store
	n map[string]int
}

func (c countingGets) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	c.n[key]++
	return c.Store.Get(ctx, key)
}

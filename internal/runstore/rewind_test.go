package runstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
)

func saveSeqs(t *testing.T, s *Store, run string, from, to int64, lineage *Lineage) {
	t.Helper()
	for seq := from; seq <= to; seq++ {
		require.NoError(t, s.Save(context.Background(), run, &Checkpoint{Seq: seq, Status: StatusRunning, Cursor: []Cursor{{Node: "w"}}, Lineage: lineage}))
	}
}

// The rule: a rewind to T that wrote A drops the checkpoints between
// them, and they are refused with the rewind that dropped them; T, A and
// the rest stay whole. A second rewind drops its own range; a checkpoint
// in both names the first.
func TestRewindDropsTheCheckpointsBetween(t *testing.T) {
	ctx := context.Background()
	s := New(blob.NewMem())
	saveSeqs(t, s, "a1", 1, 11, nil)
	rep, err := s.Rewind(ctx, "a1", 5)
	require.NoError(t, err)
	require.Equal(t, int64(12), rep.Checkpoint.Seq)
	saveSeqs(t, s, "a1", 13, 14, rep.Checkpoint.Lineage)

	drops, err := s.Drops(ctx, "a1")
	require.NoError(t, err)
	assert.Equal(t, []Drop{{To: 5, At: 12}}, drops)
	for seq := int64(1); seq <= 14; seq++ {
		_, err := s.GetWhole(ctx, "a1", seq)
		if seq > 5 && seq < 12 {
			assert.ErrorIs(t, err, ErrDropped, "checkpoint %d", seq)
			assert.ErrorContains(t, err, "the rewind to checkpoint 5, which wrote checkpoint 12, dropped checkpoints 6 to 11")
			assert.ErrorContains(t, err, "use checkpoint 5 or earlier, or 12 or later")
		} else {
			assert.NoError(t, err, "checkpoint %d", seq)
		}
	}
	_, err = s.Rewind(ctx, "a1", 10)
	assert.ErrorIs(t, err, ErrDropped, "rewind --to a dropped checkpoint")
	latest, err := s.Latest(ctx, "a1")
	require.NoError(t, err)
	assert.Equal(t, int64(14), latest.Seq, "a refused rewind writes nothing")

	rep, err = s.Rewind(ctx, "a1", 3)
	require.NoError(t, err)
	drops, err = s.Drops(ctx, "a1")
	require.NoError(t, err)
	assert.Equal(t, []Drop{{To: 5, At: 12}, {To: 3, At: 15}}, drops)
	d, dropped, err := s.DroppedBy(ctx, "a1", 8)
	require.NoError(t, err)
	assert.True(t, dropped)
	assert.Equal(t, Drop{To: 5, At: 12}, d)
	d, dropped, err = s.DroppedBy(ctx, "a1", 13)
	require.NoError(t, err)
	assert.True(t, dropped)
	assert.Equal(t, Drop{To: 3, At: 15}, d)
}

// A rewind written before lineages named their own checkpoint: the first
// checkpoint carrying its lineage is the one it wrote.
func TestDropsOfRewindsBeforeLineageAt(t *testing.T) {
	s := New(blob.NewMem())
	saveSeqs(t, s, "a1", 1, 4, nil)
	saveSeqs(t, s, "a1", 5, 7, &Lineage{Run: "a1", Seq: 2, Kind: "rewind"})
	drops, err := s.Drops(context.Background(), "a1")
	require.NoError(t, err)
	assert.Equal(t, []Drop{{To: 2, At: 5}}, drops)
}

// Rewinding a run to the checkpoint at which it ended would visit
// nothing: refused, never a new failure.
func TestRewindRefusesTheCheckpointARunEndedAt(t *testing.T) {
	ctx := context.Background()
	s := New(blob.NewMem())
	saveSeqs(t, s, "b2", 1, 7, nil)
	require.NoError(t, s.Save(ctx, "b2", &Checkpoint{Seq: 8, Status: StatusCompleted}))
	_, err := s.Rewind(ctx, "b2", 8)
	assert.ErrorIs(t, err, ErrNothingToRun)
	assert.ErrorContains(t, err, "the run ended at checkpoint 8 (completed) with nothing left to visit")
	infos, err := s.List(ctx, "b2")
	require.NoError(t, err)
	assert.Len(t, infos, 8, "nothing written")
	_, err = s.Rewind(ctx, "b2", 7)
	assert.NoError(t, err)
}

package runstore

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
)

// A workflow task that saved a checkpoint and died with its worker runs
// again on another worker with a later clock: the same checkpoint, its
// steps timed anew. That save succeeds and the first stands; any other
// difference is still ErrSeqTaken.
func TestSaveAgainWithOnlyNewTimingKeepsTheFirst(t *testing.T) {
	t.Run("unsigned", func(t *testing.T) { saveAgain(t, New(blob.NewMem())) })
	t.Run("signed", func(t *testing.T) { saveAgain(t, New(blob.NewMem(), WithKey(bytes.Repeat([]byte{7}, 32)))) })
}

func saveAgain(t *testing.T, s *Store) {
	ctx := context.Background()
	first := &Checkpoint{Seq: 1, Status: StatusRunning, Visits: map[string]int{"w": 1},
		Path: []Step{{Node: "w", Visit: 1, Status: "ok", StartedAt: "2026-12-01T10:00:00Z", DurationMS: 40}}}
	require.NoError(t, s.Save(ctx, "r", first))

	again := *first
	again.Path = []Step{{Node: "w", Visit: 1, Status: "ok", StartedAt: "2026-12-01T10:00:09Z", DurationMS: 9040}}
	require.NoError(t, s.Save(ctx, "r", &again))
	got, err := s.Get(ctx, "r", 1)
	require.NoError(t, err)
	require.Equal(t, int64(40), got.Path[0].DurationMS, "the first save stands")

	other := again
	other.Visits = map[string]int{"w": 2}
	require.ErrorIs(t, s.Save(ctx, "r", &other), ErrSeqTaken)
}

package runstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
)

// countingStore counts reads.
type countingStore struct {
	blob.Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

// putRaw stores cp as it is, path blocks and all.
func putRaw(t *testing.T, b blob.Store, cp *Checkpoint) {
	plain, err := Encode(cp)
	require.NoError(t, err)
	require.NoError(t, blob.PutBytes(context.Background(), b, checkpointKey(cp.RunID, cp.Seq), Compress(plain)))
}

// A checkpoint is untrusted: one naming many blocks costs a bounded number
// of reads, and a block that inflates past its cap is lost history.
func TestHostilePathBlocksLoseOnlyHistory(t *testing.T) {
	ctx := context.Background()
	mem := &countingStore{Store: blob.NewMem()}
	s := New(mem)

	cp := &Checkpoint{RunID: "r", Seq: 1, Status: StatusRunning, PathTotal: 1000, Path: []Step{{Node: "a", Visit: 1000}}, PathBlocksAt: 0}
	for i := range 200 {
		steps, digest := PathBlockSteps, strings.Repeat("0", 64)
		switch i {
		case 199:
			steps = 1 << 40 // not a block's name: never read
		case 198:
			digest = "../../other/checkpoints/" + strings.Repeat("0", 40) // nor is this
		}
		cp.PathBlocks = append(cp.PathBlocks, PathBlock{First: i*50 + 1, Steps: steps, Digest: digest})
	}
	putRaw(t, mem, cp)
	have, err := s.Get(ctx, "r", 1)
	require.NoError(t, err)
	assert.Equal(t, []Step{{Node: "a", Visit: 1000}}, have.Path)
	assert.Equal(t, 200*PathBlockSteps, have.PathLost)
	// The checkpoint, and the newest blocks but the two that are no blocks.
	assert.Equal(t, int64(1+maxPathBlocks-2), mem.gets.Load(), "a checkpoint naming 200 blocks costs a bounded number of reads")

	// A block that is what its digest says, but inflates to 64 MiB.
	var bomb bytes.Buffer
	w, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	_, _ = w.Write([]byte("["))
	_, _ = w.Write(make([]byte, 64<<20))
	_ = w.Close()
	sum := sha256.Sum256(bomb.Bytes())
	digest := hex.EncodeToString(sum[:])
	require.NoError(t, blob.PutBytes(ctx, mem, pathBlockKey("r", digest), bomb.Bytes()))
	steps := make([]Step, PathBlockSteps)
	for i := range steps {
		steps[i] = Step{Node: "a", Visit: 51 + i}
	}
	good, err := json.Marshal(steps)
	require.NoError(t, err)
	goodBody := Compress(good)
	gsum := sha256.Sum256(goodBody)
	gdigest := hex.EncodeToString(gsum[:])
	require.NoError(t, blob.PutBytes(ctx, mem, pathBlockKey("r", gdigest), goodBody))

	cp = &Checkpoint{RunID: "r", Seq: 2, Status: StatusRunning, PathTotal: 100, PathBlocks: []PathBlock{
		{First: 1, Steps: 50, Digest: digest},
		{First: 51, Steps: 50, Digest: gdigest},
	}}
	putRaw(t, mem, cp)
	have, err = s.Get(ctx, "r", 2)
	require.NoError(t, err)
	assert.Equal(t, steps, have.Path, "the path goes on after the block that would not decompress")
	assert.Equal(t, 50, have.PathLost)
}

// The memo of written blocks stays bounded, forgetting stale blocks first.
func TestWrittenBlocksStayBounded(t *testing.T) {
	var w writtenBlocks
	steps := []Step{{Node: "a", Visit: 1}}
	w.add("r", 1, steps, "d1")
	d, ok := w.digest("r", 1, steps)
	assert.True(t, ok)
	assert.Equal(t, "d1", d)
	_, ok = w.digest("r", 1, []Step{{Node: "a", Visit: 2}})
	assert.False(t, ok, "other steps under the same first step are another block")

	for i := range maxMemos - 1 {
		w.add("old", i+2, steps, "x")
	}
	for id, m := range w.known {
		if id != blockID("r", 1) {
			m.at = m.at.Add(-2 * blockMemory)
			w.known[id] = m
		}
	}
	w.add("r", 51, steps, "d2")
	assert.Len(t, w.known, 2, "the stale blocks went, the fresh ones stayed")
	_, ok = w.digest("r", 1, steps)
	assert.True(t, ok)

	for i := range maxMemos {
		w.add("new", i+1, steps, "y")
	}
	assert.Less(t, len(w.known), maxMemos+1, "a memo full of fresh blocks starts again")
}

package runstore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/testenv"
)

// The compatibility fixture: the store of a run as the code of 3b88009
// wrote it, while the checkpoint still embedded graph.Graph (a scripted
// agent with a network allowlist and limits fans out to two tool nodes,
// a pick join keeps one, and the run waits at a human node), every
// checkpoint signed with CompatKey. The workflows package resumes it
// (TestResumesACheckpointOf3b88009).
const (
	CompatRun = "compat-1"
	CompatKey = "compat-fixture-key-32-bytes-long"
)

// compatDir is the fixture's store.
func compatDir() string {
	return filepath.Join(testenv.Root(), "testdata", "checkpoints", "compat-3b88009")
}

// The checkpoint format did not change when the run store began keeping
// the graph as bytes: every checkpoint 3b88009 wrote reads and verifies
// (its MAC under the key), its graph reads back whole, and saved again it
// is the same bytes to the last one, MAC included. So a checkpoint this
// code writes is one the code of 3b88009 reads, and the other way round.
func TestCheckpointsOf3b88009ReadAndWriteTheSameBytes(t *testing.T) {
	ctx := context.Background()
	old, err := blob.OpenFS(compatDir())
	require.NoError(t, err)
	s := runstore.New(old, runstore.WithKey([]byte(CompatKey)))
	infos, err := s.List(ctx, CompatRun)
	require.NoError(t, err)
	require.Len(t, infos, 7)

	again := runstore.New(blob.NewMem(), runstore.WithKey([]byte(CompatKey)))
	for _, info := range infos {
		raw, err := os.ReadFile(filepath.Join(compatDir(), filepath.FromSlash(info.Key)))
		require.NoError(t, err)
		require.True(t, runstore.Signed(raw), "checkpoint %d is signed", info.Seq)
		cp, err := s.Get(ctx, CompatRun, info.Seq)
		require.NoError(t, err, "checkpoint %d reads and its MAC verifies", info.Seq)

		require.NoError(t, again.Save(ctx, CompatRun, cp))
		written, err := blob.GetBytes(ctx, again.Blobs(), info.Key)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(raw, written), "checkpoint %d saved again is byte for byte what 3b88009 wrote", info.Seq)

		_, err = runstore.New(old, runstore.WithKey(testKey(9))).Get(ctx, CompatRun, info.Seq)
		assert.ErrorIs(t, err, runstore.ErrCheckpointAuth, "and it is verified: another key refuses it")
	}

	cp, err := s.Latest(ctx, CompatRun)
	require.NoError(t, err)
	assert.Equal(t, runstore.StatusWaiting, cp.Status)
	assert.Equal(t, "compat", cp.GraphName())
	g, err := graph.FromJSON(cp.Graph)
	require.NoError(t, err)
	plan, _ := g.Node("plan")
	best, _ := g.Node("best")
	swap, _ := g.Node("swap")
	require.NotNil(t, plan.Network)
	assert.Equal(t, []string{"api.example.com:443", "*.example.org:*"}, plan.Network.Allow)
	assert.Equal(t, graph.Limits{Memory: "512MiB", Pids: 64, CPU: 1.5}, *plan.Limits)
	assert.Equal(t, graph.NetworkNone, swap.Network.Mode)
	assert.Equal(t, graph.JoinWorkspace{Mode: graph.JoinPick, Pick: "last.exit_code == 0", By: "diff.lines"}, *best.Workspace)
	assert.Equal(t, int64(100000), g.Budget.MaxTokens)
}

// A checkpoint whose graph is not a JSON object is refused as it is read,
// as it was when the graph was decoded with the checkpoint.
func TestCheckpointWithAGraphThatIsNoObjectIsInvalid(t *testing.T) {
	for _, g := range []string{`"loop"`, `[1]`, `7`} {
		_, err := runstore.Decode([]byte(`{"version":1,"run_id":"r1","seq":1,"graph":` + g + `}`))
		assert.ErrorIs(t, err, runstore.ErrInvalidCheckpoint, g)
	}
	cp, err := runstore.Decode([]byte(`{"version":1,"run_id":"r1","seq":1,"graph":null}`))
	require.NoError(t, err)
	assert.Empty(t, cp.GraphName())
}

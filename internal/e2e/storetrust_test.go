package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// TestBucketWriterCannotChooseTheArgv is issue 21 item 2 end to end: a
// bucket writer rewrites a tool node's argv in a finished run's
// checkpoint. Without a key, rewind runs the graph of the run's own
// workflow input, which Temporal holds, not the bucket's (checkpoint 1 is
// the one after the first tool, so the rewound run runs check again); with
// TETHER_CHECKPOINT_KEY, workers sign every checkpoint and tether refuses
// the forged one, and the run written before the key is read again only
// after `tether store sign`.
func TestBucketWriterCannotChooseTheArgv(t *testing.T) {
	ctx := context.Background()
	h, _ := cliHarness(t)
	g := testGraph(t, "argv")
	t.Setenv(runstore.KeyEnv, "")

	// forge rewrites the argv in every checkpoint of run id.
	forge := func(id string) {
		t.Helper()
		infos, err := h.blobs.List(ctx, fmt.Sprintf("runs/%s/checkpoints/", id))
		require.NoError(t, err)
		require.NotEmpty(t, infos)
		for _, in := range infos {
			raw, err := blob.GetBytes(ctx, h.blobs, in.Key)
			require.NoError(t, err)
			var header []byte // a MAC line, kept as it is
			if runstore.Signed(raw) {
				i := bytes.IndexByte(raw, '\n') + 1
				header, raw = raw[:i:i], raw[i:]
			}
			plain, err := runstore.Decompress(raw)
			require.NoError(t, err)
			forged := bytes.Replace(plain, []byte("echo genuine"), []byte("echo forged"), 1)
			require.NotEqual(t, plain, forged, "%s names the tool's argv", in.Key)
			require.NoError(t, blob.PutBytes(ctx, h.blobs, in.Key, append(header, runstore.Compress(forged)...)))
		}
	}

	// No key: the rewound run executes Temporal's copy of the graph.
	res, err := h.result(h.start("argv-plain", g, nil))
	require.NoError(t, err)
	require.Equal(t, "genuine\n", res.Output["said"])
	forge("argv-plain")
	code, out := tetherCode(t, "rewind", "argv-plain", "--to", "1")
	require.Equal(t, cli.ExitOK, code, out)
	res, err = h.result(h.c.GetWorkflow(ctx, "argv-plain", ""))
	require.NoError(t, err)
	assert.Equal(t, "genuine\n", res.Output["said"], "rewind ran the bucket's argv")
	rewound, err := h.runs.Get(ctx, "argv-plain", 4)
	require.NoError(t, err, "the rewind checkpoint")
	assert.Equal(t, []string{"sh", "-c", "echo genuine"}, runapi.GraphOrEmpty(rewound).Nodes[1].Run, "the rewind checkpoint carries Temporal's graph")

	// A run stopped while it waits (terminated, so no fail-stop carries
	// its checkpoint) resumes from the store's checkpoint with Temporal's
	// graph.
	gAsk := testGraph(t, "argv-ask")
	h.start("argv-resume", gAsk, nil)
	h.waitQuestion("argv-resume")
	require.NoError(t, h.c.TerminateWorkflow(ctx, "argv-resume", "", "the test stops it"))
	forge("argv-resume")
	code, out = tetherCode(t, "resume", "argv-resume")
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "graph from the run's workflow input")
	q := h.waitQuestion("argv-resume")
	h.answer("argv-resume", q.ID, "go")
	res, err = h.result(h.c.GetWorkflow(ctx, "argv-resume", ""))
	require.NoError(t, err)
	assert.Equal(t, "genuine\n", res.Output["said"], "resume ran the bucket's argv")

	// With a key, the workers sign; a forged checkpoint is refused.
	key := bytes.Repeat([]byte{7}, runstore.KeySize)
	h.stopWorker()
	h.checkpointKey = key
	h.startWorker()
	t.Setenv(runstore.KeyEnv, hex.EncodeToString(key))
	res, err = h.result(h.start("argv-signed", g, nil))
	require.NoError(t, err)
	require.Equal(t, "genuine\n", res.Output["said"])
	code, out = tetherCode(t, "checkpoints", "argv-signed")
	require.Equal(t, cli.ExitOK, code, out)
	forge("argv-signed")
	for _, args := range [][]string{{"checkpoints", "argv-signed"}, {"rewind", "argv-signed", "--to", "1"}, {"fork", "argv-signed", "--at", "1"}} {
		code, out = tetherCode(t, args...)
		assert.Equal(t, cli.ExitFailed, code, "%v: %s", args, out)
		assert.Contains(t, out, "failed authentication", "%v", args)
	}

	// The run from before the key: refused until signed, then read.
	code, out = tetherCode(t, "checkpoints", "argv-plain")
	assert.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, "tether store sign argv-plain")
	code, out = tetherCode(t, "store", "sign", "argv-plain")
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "signed")
	code, out = tetherCode(t, "checkpoints", "argv-plain")
	assert.Equal(t, cli.ExitOK, code, out)
}

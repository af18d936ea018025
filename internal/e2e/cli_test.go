package e2e

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/testenv"
)

func tetherCode(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out strings.Builder
	code := cli.Main(args, &out, &out)
	return code, out.String()
}

// `tether validate` on a broken graph prints every problem with its code
// and position and exits 2.
func TestValidateBrokenGraph(t *testing.T) {
	code, out := tetherCode(t, "validate", filepath.Join(testenv.Root(), "internal", "graph", "testdata", "broken.yaml"))
	assert.Equal(t, cli.ExitUsage, code)
	lines := regexp.MustCompile(`(?m)^\S+broken\.yaml:\d+:\d+: G\d{3} (error|warning): .+$`).FindAllString(out, -1)
	assert.GreaterOrEqual(t, len(lines), 10, out)
	for _, code := range []string{"G013", "G016", "G017", "G020", "G024", "G031"} {
		assert.Contains(t, out, code, out)
	}

	code, out = tetherCode(t, "validate", filepath.Join(testenv.Root(), "examples", "review-loop.yaml"))
	assert.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "ok")
}

// The lifecycle commands on a real server: status from the run store with
// no worker up, checkpoints, rewind (checkpoint first, then blobs), fork
// (no refs) and delete (refused while open, then everything under the run).
func TestRunLifecycleCommands(t *testing.T) {
	h, _ := fileHarness(t)
	id := "lifecycle"
	run := h.start(id, persistGraph(t, "scripted"), nil)
	q := h.waitQuestion(id)
	h.answer(id, q.ID, "revise")
	q = h.waitQuestion(id)
	require.Equal(t, "judge-2", q.ID)

	// delete refuses an open run.
	h.useCLI(t)
	code, out := tetherCode(t, "delete", id)
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "still open")

	// status with no worker up answers from the run store.
	h.stopWorker()
	code, out = tetherCode(t, "status", id)
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "run store")
	assert.Contains(t, out, "judge-2")

	code, out = tetherCode(t, "checkpoints", id)
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "waiting")

	// Finish the run, then rewind it to the checkpoint after the first
	// writer visit.
	h.startWorker()
	h.answer(id, q.ID, "approve")
	_, err := h.result(run)
	require.NoError(t, err)
	infos, err := h.runs.List(context.Background(), id)
	require.NoError(t, err)
	first, err := h.runs.Get(context.Background(), id, infos[0].Seq)
	require.NoError(t, err)
	require.Equal(t, 1, first.Visits["writer"])
	latest, err := h.runs.Latest(context.Background(), id)
	require.NoError(t, err)
	// The newest blob of the latest slot (a part after the first visit's,
	// or a new base) is one only checkpoints after the first named.
	refs := latest.NodeSessions["writer"].Refs()
	dropped := refs[len(refs)-1]
	kept := first.NodeSessions["writer"].StateRef
	require.NotEqual(t, dropped, kept)

	code, out = tetherCode(t, "rewind", id, "--to", "1")
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "rewound to checkpoint 1")
	_, err = h.blobs.Stat(context.Background(), dropped)
	assert.Error(t, err, "the blob only later checkpoints named is gone")
	rewound, err := h.runs.Get(context.Background(), id, latest.Seq+1)
	require.NoError(t, err, "the rewind checkpoint was written")
	assert.Equal(t, kept, rewound.NodeSessions["writer"].StateRef)
	assert.Equal(t, "rewind", rewound.Lineage.Kind)

	q = h.waitQuestion(id)
	h.answer(id, q.ID, "approve")
	_, err = h.result(h.c.GetWorkflow(context.Background(), id, ""))
	require.NoError(t, err)

	// fork starts a new run with no refs.
	code, out = tetherCode(t, "fork", id, "--at", "1", "--id", "forked")
	require.Equal(t, cli.ExitOK, code, out)
	q = h.waitQuestion("forked")
	h.answer("forked", q.ID, "approve")
	_, err = h.result(h.c.GetWorkflow(context.Background(), "forked", ""))
	require.NoError(t, err)
	fcp, err := h.runs.Latest(context.Background(), "forked")
	require.NoError(t, err)
	assert.Equal(t, "fork", fcp.Lineage.Kind)

	// delete removes every checkpoint and blob of the run.
	code, out = tetherCode(t, "delete", id)
	require.Equal(t, cli.ExitOK, code, out)
	assert.Regexp(t, `deleted: \d+ checkpoint\(s\), \d+ session blob\(s\)`, out)
	keys, err := h.blobs.List(context.Background(), "runs/"+id+"/")
	require.NoError(t, err)
	assert.Empty(t, keys)

	// A graph drawn with the forked run's path.
	code, out = tetherCode(t, "graph", filepath.Join(testenv.Root(), "examples", "review-loop.yaml"), "--format", "dot")
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, `"writer" -> "judge"`)

	// With no file, the graph a run executes, as its checkpoint holds it:
	// printed as a graph file, it reads back as the graph the run started
	// with.
	code, out = tetherCode(t, "graph", "--run", "forked", "--format", "yaml")
	require.Equal(t, cli.ExitOK, code, out)
	printed, err := graph.Parse([]byte(out), "printed.yaml")
	require.NoError(t, err, out)
	want, err := graph.Encode(persistGraph(t, "scripted"))
	require.NoError(t, err)
	again, err := graph.Encode(printed)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(again))
	code, out = tetherCode(t, "graph", "--run", "forked")
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "flowchart")
	code, out = tetherCode(t, "graph")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "--run RUN")
}

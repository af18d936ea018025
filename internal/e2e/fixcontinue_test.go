package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/runstore"
)

// TestResumeWithACorrectedGraph: a run that failed on a mistake in its
// graph is fixed and continued. Resumed as it was it would fail the same
// way, so plain `tether resume` is refused and says what to do; a graph
// that cannot take over (a node the checkpoint needs removed, or of
// another kind) is refused; the corrected graph continues from the
// tool's recorded output without running the tool again (its effect
// happens once), the change is recorded in the run and shown by `tether
// status`, the console and the new execution's details.
func TestResumeWithACorrectedGraph(t *testing.T) {
	h, dir := cliHarness(t)
	id := "deploy-1"
	code, out := tetherCode(t, "run", graphFile(t, "deploy"), "--id", id, "--follow")
	require.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, "no edge out of node")
	cp, err := h.runs.Latest(context.Background(), id)
	require.NoError(t, err)
	require.NotNil(t, cp.Ended, "the failed checkpoint names the visit that ended")
	assert.Equal(t, runstore.EndedVisit{Node: "deploy", Visit: 1}, *cp.Ended)

	// The same graph would fail the same way.
	code, out = tetherCode(t, "resume", id)
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "resumed with the same graph it would choose from the same output and fail the same way")
	assert.Contains(t, out, "tether resume "+id+" --graph FILE")

	// A graph that cannot take over.
	gone := graphFile(t, "deploy-gone")
	code, out = tetherCode(t, "resume", id, "--graph", gone)
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `node "deploy" is gone, but the run goes on from it`)
	renamed := writeGraph(t, "renamed.yaml", strings.Replace(graphYAML(t, "deploy-fixed"), "name: deploy", "name: deploy-v2", 1))
	code, out = tetherCode(t, "resume", id, "--graph", renamed)
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `the graph is named "deploy-v2", the run's "deploy"`)
	kind := graphFile(t, "deploy-kind")
	code, out = tetherCode(t, "resume", id, "--graph", kind)
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `node "deploy" is a human node now, a tool node before`)
	assert.Equal(t, 1, h.executions(id), "nothing started")

	// The corrected graph goes on from the tool's output.
	fixed := graphFile(t, "deploy-fixed")
	out = h.tether(t, dir, "resume", id, "--graph", fixed, "--follow")
	assert.Contains(t, out, "with the corrected graph "+fixed+": edge deploy → done when output.exit_code == 0 added; edge deploy → done when output.exit_code == 1 removed")
	assert.Contains(t, out, "the output of deploy visit 1 is taken again (not visited again)")
	assert.Contains(t, out, "completed at done")
	st := h.tether(t, dir, "status", id)
	assert.Contains(t, st, "corrected:  at checkpoint 1 by resume from "+fixed+": edge deploy → done")
	assert.Len(t, regexp.MustCompile(`(?m)^ +deploy +visit`).FindAllString(st, -1), 1, "the tool ran once: %s", st)
	effects := exportFile(t, h, dir, id, "effects.txt")
	assert.Equal(t, "deployed\n", effects, "the tool's effect happened once")
	cp, err = h.runs.Latest(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, cp.GraphEdits, 1)
	e := cp.GraphEdits[0]
	assert.Equal(t, "resume", e.Via)
	assert.Equal(t, fixed, e.File)
	assert.Len(t, e.Digest, 64)
	assert.Empty(t, e.Rerun)
	assert.Nil(t, cp.Ended)
	desc, err := h.c.DescribeWorkflow(context.Background(), id, "")
	require.NoError(t, err)
	details, err := desc.GetStaticDetails()
	require.NoError(t, err)
	assert.Contains(t, details, "Corrected graph from `"+fixed+"`", "the new execution's details say so")
	h.recordHistory("ended-visit", id)

	c := startConsole(t, h, nil)
	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate(c.URL+"/runs/"+id))
	waitText(t, ctx, "#facts", "Graph corrected")
	assert.Contains(t, text(t, ctx, "#facts"), "by resume from "+fixed)
	screenshot(t, ctx, "run-graph-corrected")

	// --rerun visits the node again, with the same graph.
	id2 := "deploy-2"
	code, out = tetherCode(t, "run", graphFile(t, "deploy"), "--id", id2, "--follow")
	require.Equal(t, cli.ExitFailed, code, out)
	code, out = tetherCode(t, "resume", id2, "--rerun", "--follow")
	assert.Equal(t, cli.ExitFailed, code, "visited again, it fails again: %s", out)
	assert.Equal(t, "deployed\ndeployed\n", exportFile(t, h, dir, id2, "effects.txt"), "--rerun ran the tool again")
}

// exportFile is a file of a run's workspace, as `tether workspace export`
// writes it.
func exportFile(t *testing.T, h *harness, dir, id, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "export")
	h.tether(t, dir, "workspace", id, "export", out)
	b, err := os.ReadFile(filepath.Join(out, name))
	require.NoError(t, err)
	return string(b)
}

// TestACancelIsNoVisit: a visit a cancel stopped is not counted: the
// path, the visit counts and `tether status` leave it out, and the
// resumed run visits the node under the same number.
func TestACancelIsNoVisit(t *testing.T) {
	h, dir := cliHarness(t)
	id := "slow-1"
	const slow = `
name: slow
start: first
nodes:
  - {id: first, kind: tool, run: ["true"]}
  - {id: slow, kind: tool, run: [sleep, "600"]}
  - {id: done, kind: end}
edges:
  - {from: first, to: slow}
  - {from: slow, to: done}
`
	file := writeGraph(t, "slow.yaml", slow)
	h.tether(t, dir, "run", file, "--id", id)
	require.Eventually(t, func() bool {
		st, err := h.query(id, 5*time.Second)
		return err == nil && len(st.Current) == 1 && st.Current[0] == "slow"
	}, runWait, 200*time.Millisecond)
	time.Sleep(time.Second) // the tool has started
	out := h.tether(t, dir, "cancel", id)
	assert.Contains(t, out, "canceled")
	st := h.tether(t, dir, "status", id)
	assert.Contains(t, st, "visits:     1", "the canceled visit of slow is no visit: %s", st)
	assert.NotContains(t, st, "slow             visit", "nor on the path")
	cp, err := h.runs.Latest(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, 0, cp.Visits["slow"])
	assert.Equal(t, 1, cp.PathTotal)
	h.recordHistory("cancel-uncounted", id)

	// Resumed with slow made quick, it visits slow under number 1.
	quick := writeGraph(t, "quick.yaml", strings.Replace(slow, `run: [sleep, "600"]`, `run: ["true"]`, 1))
	out = h.tether(t, dir, "resume", id, "--graph", quick, "--follow")
	assert.Contains(t, out, "node slow changed")
	assert.Contains(t, out, "completed at done")
	st = h.tether(t, dir, "status", id)
	assert.Contains(t, st, "visits:     3")
	assert.Regexp(t, `slow +visit 1 +ok`, st, "the resumed run visits slow under number 1")
}

package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cli"
)

// TestBudgetStopAndResume: a run spends its token budget and stops
// resumably, with the reason and the usage in tether status; resumed with
// a raised budget, it finishes, and the usage goes on adding up.
func TestBudgetStopAndResume(t *testing.T) {
	h, dir := cliHarness(t)
	file := graphFile(t, "budget-loop")

	code, out := tetherCode(t, "run", file, "--id", "budget", "--follow")
	require.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, "the run's budget is spent")
	assert.Contains(t, out, "tether resume budget --max-tokens N")
	h.recordHistory("budget-stop", "budget")

	status := h.tether(t, dir, "status", "budget")
	assert.Contains(t, status, "status:     failed_resumable")
	assert.Contains(t, status, "usage:      run: ")
	assert.Contains(t, status, "usage:      writer (")

	out = h.tether(t, dir, "resume", "budget", "--max-tokens", "100000", "--follow")
	assert.Contains(t, out, "resumed from the checkpoint of its budget stop")
	assert.Contains(t, out, "completed at done after")
	st := h.state("budget")
	assert.Equal(t, 5, st.Visits["writer"])
	assert.Greater(t, st.TotalUsage.Tokens(), int64(40))
}

// TestNodeBudgetStopAndResume: a node's own budget stops the run, which
// names the node; `tether resume --node` raises that node's budget (not
// the run's), and the run finishes on a worker that never saw it.
func TestNodeBudgetStopAndResume(t *testing.T) {
	h, dir := cliHarness(t)
	// The run's budget moves onto the writer.
	file := writeGraph(t, "budget.yaml", graphYAML(t, "budget-loop",
		"budget: {max_tokens: 40}\n", "",
		`script: ["turn {{.Turn}}: a draft of some words"]}`, `script: ["turn {{.Turn}}: a draft of some words"], budget: {max_tokens: 40}}`))

	code, out := tetherCode(t, "run", file, "--id", "node-budget", "--follow")
	require.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, "the budget of node writer is spent")

	stopped, err := h.runs.Latest(t.Context(), "node-budget")
	require.NoError(t, err)
	visits := h.state("node-budget").Visits["writer"]

	// Raising the run's budget leaves the node's spent: resume refuses,
	// and starts nothing.
	code, out = tetherCode(t, "resume", "node-budget", "--max-tokens", "100000", "--follow")
	require.Equal(t, cli.ExitUsage, code, "raising the run's budget leaves the node's spent: %s", out)
	assert.Contains(t, out, "the budget of node writer is spent: ")
	assert.Contains(t, out, "so it would stop again before its next visit")
	latest, err := h.runs.Latest(t.Context(), "node-budget")
	require.NoError(t, err)
	assert.Equal(t, stopped.Seq, latest.Seq, "a refused resume writes no checkpoint")

	// A rewind to the stop's own checkpoint starts an execution with the
	// budget spent: it stops again before any visit.
	code, out = tetherCode(t, "rewind", "node-budget", "--to", fmt.Sprint(stopped.Seq), "--follow")
	require.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, "the budget of node writer is spent")
	assert.Equal(t, visits, h.state("node-budget").Visits["writer"], "no visit past a spent budget")
	h.recordHistory("budget-stop-at-start", "node-budget")

	h.stopWorker()
	h.startWorker()
	out = h.tether(t, dir, "resume", "node-budget", "--node", "writer", "--max-tokens", "100000", "--follow")
	assert.Contains(t, out, "completed at done after")
	st := h.state("node-budget")
	assert.Equal(t, 5, st.Visits["writer"])
}

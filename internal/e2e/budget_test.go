package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/activities"
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

// TestBudgetStopsAVisitMidTurn: a real Claude Code, confined, whose model
// answers 400 tokens a call under a node budget of 1,000 tokens. The
// worker's model relay lets its first three calls through (800 spent
// before the third) and refuses the fourth: the visit stops at its third
// call, not after its fifth, and the run stops resumably, naming the
// budget (1,200 tokens: one call over). Resumed with `--max-tokens` on a
// worker that never saw it, the visit goes on in its own conversation,
// which holds every turn: the prompt, the three commands and their output,
// and the note that the turn was stopped.
func TestBudgetStopsAVisitMidTurn(t *testing.T) {
	h, dir, fake := cliBackendsHarness(t)
	file := graphFile(t, "budget-mid-turn")

	const reason = "the budget of node writer is spent: 1200 tokens used, max_tokens is 1000"
	code, out := tetherCode(t, "run", file, "--id", "mid-turn", "--follow")
	require.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, reason+", in the middle of node writer's visit 1")
	assert.Contains(t, out, "tether resume mid-turn --max-tokens N")
	h.recordHistory("budget-mid-visit", "mid-turn")
	turns := fake.Turns()
	require.Len(t, turns, 3, "the fourth call was refused before it reached the model")
	for i, want := range []string{"one-out", "two-out", "three-out"} {
		assert.Contains(t, turns[i].Reply, "echo "+want, "call %d ran a command", i+1)
	}
	assert.Empty(t, fake.Refused())

	status := h.tether(t, dir, "status", "mid-turn")
	assert.Contains(t, status, "status:     failed_resumable")
	assert.Contains(t, status, "budget stop")
	assert.Contains(t, status, reason)

	// Another worker, with an empty state root: the conversation comes
	// back from the store.
	h.stopWorker()
	h.startWorker()
	fake.Reset()
	out = h.tether(t, dir, "resume", "mid-turn", "--node", "writer", "--max-tokens", "100000", "--follow")
	assert.Contains(t, out, "completed at done after")
	last := fake.Turns()[len(fake.Turns())-1]
	cont := fmt.Sprintf(activities.BudgetContinue, reason)
	require.Len(t, last.Prompts, 2, "the stopped turn and the note that continues it: %q", last.Prompts)
	assert.True(t, strings.HasPrefix(last.Prompts[0], "write it\nTOKENS: 400"), last.Prompts[0])
	assert.Equal(t, cont, last.Prompts[1])
	// (The body is long: the checks print none of it.)
	body := string(last.Body)
	for _, o := range []string{"one-out", "two-out", "three-out"} {
		assert.True(t, strings.Contains(body, `"content":"`+o+`"`), "the conversation holds the stopped turn's command %s and its output", o)
	}
	assert.False(t, strings.Contains(body, `"content":"four-out"`), "the refused call never ran its command")
	assert.True(t, strings.HasPrefix(last.Reply, "turn 2: write it"), last.Reply)
	st := h.state("mid-turn")
	assert.Equal(t, 1, st.Visits["writer"], "the stopped visit was continued, not repeated")
}

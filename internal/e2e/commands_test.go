package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/runapi"
)

// TestCommandsSayWhatHappened: each command item of the review, on real
// runs. `status --follow` exits 1 for a failed run whether it saw it end
// or it had ended; `status --json` never says "ok" beside an outcome that
// is not; `tether logs` shows a human visit's question and answer, the
// guidance an agent got, a visit once after a rewind, and never claims
// Temporal has no history when it has; a closed run's question offers no
// answer line; `guide` refuses a node the run cannot visit again;
// `delete`, `cancel`, `logs` and `status` refuse an unknown run with
// exit 2, as `answer` does a closed run; an error names a node once.
func TestCommandsSayWhatHappened(t *testing.T) {
	h, dir := cliHarness(t)

	// status --follow: a failed run is a failure however it is followed.
	failing := graphFile(t, "deploy")
	h.tether(t, dir, "run", failing, "--id", "fail-1")
	code, out := tetherCode(t, "status", "fail-1", "--follow")
	assert.Equal(t, cli.ExitFailed, code, "following it to its end: %s", out)
	code, out = tetherCode(t, "status", "fail-1", "--follow")
	assert.Equal(t, cli.ExitFailed, code, "it had ended: %s", out)
	assert.Contains(t, out, "run fail-1 ended failed")
	code, out = tetherCode(t, "status", "fail-1")
	assert.Equal(t, cli.ExitOK, code, "without --follow, status shows: %s", out)

	// status --json: a tool that timed out is not "ok".
	slowTool := graphFile(t, "timeout")
	h.tether(t, dir, "run", slowTool, "--id", "to-1", "--follow")
	out = h.tether(t, dir, "status", "to-1", "--json")
	var st runapi.State
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.NotEmpty(t, st.Path)
	assert.Equal(t, "t", st.Path[0].Node)
	assert.Equal(t, "timed_out", st.Path[0].Outcome)
	assert.Equal(t, "timed_out", st.Path[0].Status, "status and outcome agree")

	// logs: a human visit, guidance, one visit after a rewind.
	guided := graphFile(t, "guided")
	h.tether(t, dir, "run", guided, "--id", "g-1")
	q := h.waitQuestion("g-1")
	out = h.tether(t, dir, "guide", "g-1", "writer", "use a wide brush")
	assert.Contains(t, out, "note sent to node writer")
	h.answer("g-1", q.ID, "blue")
	require.Equal(t, "last-1", h.waitQuestion("g-1").ID)
	code, out = tetherCode(t, "guide", "g-1", "writer", "again")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "node writer cannot be visited again from where the run is (last)")
	logs := h.tether(t, dir, "logs", "g-1")
	t.Logf("tether logs g-1:\n%s", logs)
	assert.Contains(t, logs, "== ask visit 1 · human ==\n-- question ask-1 --\nWhich colour?")
	assert.Regexp(t, `-- answer \(by [^,]+, \S+, update\) --\nblue`, logs)
	assert.Contains(t, logs, "-- guidance it got after its prompt --\nuse a wide brush")
	logs = h.tether(t, dir, "logs", "g-1", "ask")
	assert.NotContains(t, logs, "Temporal has no history", "Temporal has it")
	assert.Contains(t, logs, "== ask visit 1 · human ==")
	code, out = tetherCode(t, "logs", "g-1", "nobody")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "run g-1 has no visit nobody in Temporal's history; its visits: ask 1, writer 1")
	assert.NotContains(t, out, "no history of run")

	h.answer("g-1", "last-1", "yes")
	_, err := h.result(h.c.GetWorkflow(context.Background(), "g-1", ""))
	require.NoError(t, err)
	h.tether(t, dir, "rewind", "g-1", "--to", "1")
	h.answer("g-1", h.waitQuestion("g-1").ID, "green")
	require.Equal(t, "last-1", h.waitQuestion("g-1").ID)
	logs = h.tether(t, dir, "logs", "g-1", "writer")
	assert.Equal(t, 1, strings.Count(logs, "== writer visit 1"), "a rewound visit shows once, as the run ran it last: %s", logs)
	assert.Contains(t, logs, "paint it green")
	assert.NotContains(t, logs, "paint it blue")

	// A closed run's question: no answer line; an answer to it is refused.
	h.tether(t, dir, "cancel", "g-1")
	out = h.tether(t, dir, "status", "g-1")
	assert.NotContains(t, out, "answer with:", out)
	assert.Contains(t, out, "(unanswered when the run ended)")
	code, out = tetherCode(t, "answer", "g-1", "last-1", "yes")
	assert.Equal(t, cli.ExitUsage, code, "a refused answer is a usage error: %s", out)
	assert.Contains(t, out, "answer refused: run g-1 is not open")

	// An unknown run is refused, not reported done.
	for _, args := range [][]string{{"delete", "nosuch"}, {"cancel", "nosuch"}, {"logs", "nosuch"}, {"status", "nosuch"}} {
		code, out := tetherCode(t, args...)
		assert.Equal(t, cli.ExitUsage, code, "%v: %s", args, out)
		assert.NotContains(t, out, "deleted", "%v", args)
		assert.Regexp(t, `(?i)no run "nosuch"|run "?nosuch"? (is )?not (found|known)`, out, "%v", args)
	}

	// An error names its node once, without the template engine's words.
	bad := graphFile(t, "bad")
	code, out = tetherCode(t, "run", bad, "--id", "bad-1", "--follow")
	assert.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, `tool node "t" (visit 1): argument 1 of its run: line 1, column`)
	assert.Contains(t, out, `map has no entry for key "nope"`)
	assert.Equal(t, 1, len(regexp.MustCompile(`node "t"`).FindAllString(out[strings.Index(out, "run bad-1 failed"):], -1)), "the node is named once: %s", out)
	for _, stutter := range []string{"graph: prompt", "template: prompt", `executing "prompt"`} {
		assert.NotContains(t, out, stutter)
	}
}

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/runstore"
)

func writeGraph(t testing.TB, name, src string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	return file
}

// Item 6: a tool's exit code, timeout and last stderr lines are on the
// visit's line of `tether run --follow` and `tether status`, and each
// writer visit shows its own tokens (the scripted agent counts a token a
// word), not only the one the node's latest output happens to hold.
func TestFollowAndStatusShowEachVisitsResult(t *testing.T) {
	h, dir := fileHarness(t)
	file := graphFile(t, "tool-loop")

	out := h.tether(t, dir, "run", file, "--id", "tools-1", "--follow")
	t.Logf("tether run --follow:\n%s", out)
	assert.Regexp(t, `(?m)^✓ writer +visit 1 +ok +\S+ +\d+ tokens, \$0\.0000  draft 1 of the adder$`, out)
	assert.Regexp(t, `(?m)^✓ writer +visit 2 +ok +\S+ +\d+ tokens, \$0\.0000  draft 2 of the adder$`, out)
	assert.Regexp(t, `(?m)^✗ check +visit 1 +exit 1 +\S+  --- FAIL: TestAdd ⏎ want 3, got 2$`, out)
	assert.Regexp(t, `(?m)^✓ check +visit 2 +ok +\S+  ok  pkg 0\.1s$`, out)
	assert.Regexp(t, `(?m)^✗ slow +visit 1 +timeout `, out)
	assert.Contains(t, out, "run tools-1 completed at done")
	assert.Equal(t, 1, strings.Count(out, "usage: run: "), "the run's usage is printed once")
	assert.NotContains(t, out, "  usage: ", "and not again after the path")
	h.recordHistory("run-id-free-tool-loop", "tools-1")

	status := h.tether(t, dir, "status", "tools-1")
	assert.Regexp(t, `(?m)^  check +visit 1 +exit 1 .*--- FAIL: TestAdd ⏎ want 3, got 2$`, status)
	assert.Regexp(t, `(?m)^  slow +visit 1 +timeout `, status)
	assert.Regexp(t, `(?m)^  writer +visit 1 +ok .* \d+ tokens, \$0\.0000  draft 1 of the adder$`, status)

	// The checkpoint in the store keeps every step's own result.
	cp, err := h.runs.Latest(t.Context(), "tools-1")
	require.NoError(t, err)
	var outcomes []string
	for _, s := range cp.Path {
		outcomes = append(outcomes, s.Node+":"+s.Outcome)
		if s.Node == "writer" {
			assert.Positive(t, s.Usage.Tokens(), "writer visit %d", s.Visit)
		}
	}
	assert.Equal(t, []string{"writer:ok", "check:exited", "writer:ok", "check:ok", "slow:timed_out", "done:ok"}, outcomes)
	assert.Equal(t, 1, cp.Path[1].ExitCode)
	assert.True(t, cp.Path[4].TimedOut)
	assert.Equal(t, runstore.OutcomeTimedOut, cp.Path[4].Outcome)

	// tether logs: what each visit was given and said, from the history.
	logs := h.tether(t, dir, "logs", "tools-1", "check", "1")
	t.Logf("tether logs tools-1 check 1:\n%s", logs)
	assert.Contains(t, logs, "== check visit 1 · tool ==")
	assert.Contains(t, logs, "-- command --\nsh -c echo building; if [ 1 -lt 2 ]")
	assert.Contains(t, logs, "exit code 1, timed out: false")
	assert.Contains(t, logs, "-- stdout (its last 4 KiB) --\nbuilding\n")
	assert.Contains(t, logs, "-- stderr (its last 4 KiB) --\n--- FAIL: TestAdd\nwant 3, got 2\n")
	assert.NotContains(t, logs, "check visit 2")
	logs = h.tether(t, dir, "logs", "tools-1", "writer")
	assert.Equal(t, 2, strings.Count(logs, "== writer visit "), logs)
	assert.Contains(t, logs, "-- output --\ndraft 2 of the adder")
	assert.Contains(t, logs, "-- usage --")
	all := h.tether(t, dir, "logs", "tools-1")
	assert.Equal(t, 5, strings.Count(all, "== "), "every agent and tool visit: %s", all)

	// Past Temporal's retention, the run store's summaries answer.
	h.deleteExecutions("tools-1")
	logs = h.tether(t, dir, "logs", "tools-1", "check")
	assert.Contains(t, logs, "Temporal has no history of run tools-1")
	assert.Regexp(t, `(?m)^  check +visit 1 +exit 1 .*--- FAIL: TestAdd`, logs)
	assert.Contains(t, logs, "    exit_code: 0", "the node's latest output")
}

package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/runstore"
)

// toolLoop is a writer, a check that fails its first visit (exit 1, with
// the reason on stderr) and passes its second, then a tool that runs past
// its timeout.
const toolLoop = `
name: tool-loop
start: writer
nodes:
  - {id: writer, kind: agent, backend: scripted, script: ["draft {{.Visit}} of the adder"]}
  - id: check
    kind: tool
    run: [sh, -c, 'echo building; if [ {{.visit}} -lt 2 ]; then echo "--- FAIL: TestAdd" >&2; echo "want 3, got 2" >&2; exit 1; fi; echo "ok  pkg 0.1s"']
  - {id: slow, kind: tool, run: [sleep, "30"], timeout: 1s}
  - {id: done, kind: end}
edges:
  - {from: writer, to: check}
  - {from: check, to: slow, when: 'output.exit_code == 0'}
  - {from: check, to: writer}
  - {from: slow, to: done}
`

func writeGraph(t *testing.T, name, src string) string {
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
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	h.startWorker()
	file := writeGraph(t, "tool-loop.yaml", toolLoop)

	out := h.tether(t, dir, "run", file, "--id", "tools-1", "--follow")
	t.Logf("tether run --follow:\n%s", out)
	assert.Regexp(t, `(?m)^✓ writer +visit 1 +ok +\S+ +\d+ tokens, \$0\.0000  draft 1 of the adder$`, out)
	assert.Regexp(t, `(?m)^✓ writer +visit 2 +ok +\S+ +\d+ tokens, \$0\.0000  draft 2 of the adder$`, out)
	assert.Regexp(t, `(?m)^✗ check +visit 1 +exit 1 +\S+  --- FAIL: TestAdd ⏎ want 3, got 2$`, out)
	assert.Regexp(t, `(?m)^✓ check +visit 2 +ok +\S+  ok  pkg 0\.1s$`, out)
	assert.Regexp(t, `(?m)^✗ slow +visit 1 +timeout `, out)
	assert.Contains(t, out, "run tools-1 completed at done")
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
}

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/graph"
)

// TestToolRunsWhereTheAgentRan: with two workers up, a tool node after an
// agent runs on the agent's worker, in the same working directory, so a
// tool oracle sees what the writer left there. Eager activities are off so
// that the server spreads activities over both workers; of eight runs,
// without affinity all would agree by chance once in 256 tries.
func TestToolRunsWhereTheAgentRan(t *testing.T) {
	h := newHarness(t, "")
	h.noEager = true
	roots := []string{h.startWorker(), h.startWorker()}
	g, err := graph.Parse([]byte(`
name: oracle
start: writer
nodes:
  - {id: writer, kind: agent, backend: scripted, session: persist, prompt: write, script: ["wrote it"]}
  - {id: check, kind: tool, run: [sh, -c, 'echo "$PWD"']}
  - {id: done, kind: end}
edges:
  - {from: writer, to: check}
  - {from: check, to: done, with: {dir: output.stdout}}
`), "oracle.yaml")
	require.NoError(t, err)
	for i := range 8 {
		id := fmt.Sprintf("oracle-%d", i)
		res, err := h.result(h.start(id, g, nil))
		require.NoError(t, err)
		dir := strings.TrimSpace(fmt.Sprint(res.Output["dir"]))
		cp, err := h.runs.Latest(t.Context(), id)
		require.NoError(t, err)
		session := cp.NodeSessions["writer"].SessionID
		require.NotEmpty(t, session)
		var wrote string
		for _, root := range roots {
			found, _ := filepath.Glob(filepath.Join(root, "state", "scripted", "sessions", "*", session+".jsonl"))
			if len(found) > 0 {
				wrote = root
			}
		}
		require.NotEmpty(t, wrote, "the writer's session is on one of the workers")
		require.True(t, strings.HasPrefix(dir, wrote+string(os.PathSeparator)), "run %d: the tool ran in %s, the writer on %s", i, dir, wrote)
		if i == 0 {
			h.recordHistory("tool-affinity", id)
		}
	}
}

// TestToolAfterAgent runs the plainest oracle loop step: an agent, then a
// tool whose exit code the edge reads. Its history, tool-node.json, was
// recorded before tool affinity existed, so replaying it proves that runs
// started by older workers still replay (GetVersion's default path).
func TestToolAfterAgent(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	g, err := graph.Parse([]byte(`
name: oracle
start: writer
nodes:
  - {id: writer, kind: agent, backend: scripted, prompt: write, script: ["wrote it"]}
  - {id: check, kind: tool, run: [sh, -c, 'test "{{.input.text}}" = "wrote it"']}
  - {id: done, kind: end}
edges:
  - {from: writer, to: check}
  - {from: check, to: done, when: 'output.exit_code == 0', with: {verdict: "'pass'"}}
`), "oracle.yaml")
	require.NoError(t, err)
	res, err := h.result(h.start("tool-node", g, nil))
	require.NoError(t, err)
	require.Equal(t, "pass", res.Output["verdict"])
	h.recordHistory("tool-node", "tool-node")
}

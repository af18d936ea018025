package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/graph"
)

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
	h.recordHistory("tool-node-workspace", "tool-node")
}

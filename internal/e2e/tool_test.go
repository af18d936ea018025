package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestToolAfterAgent runs the plainest oracle loop step: an agent, then a
// tool whose exit code the edge reads. Its history, tool-node.json, was
// recorded before tool affinity existed, so replaying it proves that runs
// started by older workers still replay (GetVersion's default path).
func TestToolAfterAgent(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	g := testGraph(t, "oracle")
	res, err := h.result(h.start("tool-node", g, nil))
	require.NoError(t, err)
	require.Equal(t, "pass", res.Output["verdict"])
	h.recordHistory("tool-node-workspace", "tool-node")
}

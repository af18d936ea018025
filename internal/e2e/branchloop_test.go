package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBranchLoopsCountTheirVisits: each branch of a fan-out loops on its
// node exactly as often as its `when` allows. Both branches' visits often
// end in one workflow task; the build before branch-visit-counts then let
// the second read its count from the copy the first's progress save had
// put in memory, and loop once more (1 run in 6 here;
// branch-visit-counts-before.json is such a run).
func TestBranchLoopsCountTheirVisits(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	g := parseGraph(t, graphYAML(t, "branch-loop"), "branch-loop.yaml")
	for i := range 12 {
		id := fmt.Sprintf("branch-loop-%d", i)
		res, err := h.result(h.start(id, g, nil))
		require.NoError(t, err)
		assert.Equal(t, "done", res.EndNode)
		visits := map[string]int{}
		for _, s := range res.Path {
			visits[s.Node]++
		}
		assert.Equal(t, map[string]int{"split": 1, "left": 3, "right": 3, "meet": 1, "done": 1}, visits, "%s: %s", id, pathString(res))
		assert.Equal(t, 3, h.state(id).Visits["left"], id)
		assert.Equal(t, 3, h.state(id).Visits["right"], id)
	}
	h.recordHistory("branch-visit-counts", "branch-loop-0")
}

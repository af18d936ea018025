package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// branchLoopGraph fans out to two branches that each loop on their one
// node while `visits < 3`.
const branchLoopGraph = `
name: branch-loop
start: split
nodes:
  - {id: split, kind: tool, fanout: all, run: [sh, -c, 'true']}
  - {id: left, kind: agent, backend: scripted, prompt: left, script: ["turn {{.Turn}}"]}
  - {id: right, kind: agent, backend: scripted, prompt: right, script: ["turn {{.Turn}}"]}
  - {id: meet, kind: join}
  - {id: done, kind: end}
edges:
  - {from: split, to: left}
  - {from: split, to: right}
  - {from: left, to: left, when: 'visits < 3'}
  - {from: left, to: meet}
  - {from: right, to: right, when: 'visits < 3'}
  - {from: right, to: meet}
  - {from: meet, to: done}
`

// TestBranchLoopsCountTheirVisits: each branch of a fan-out loops on its
// node exactly as often as its `when` allows. Both branches' visits often
// end in one workflow task; the build before branch-visit-counts then let
// the second read its count from the copy the first's progress save had
// put in memory, and loop once more (1 run in 6 here;
// branch-visit-counts-before.json is such a run).
func TestBranchLoopsCountTheirVisits(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	g := parseGraph(t, branchLoopGraph, "branch-loop.yaml")
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

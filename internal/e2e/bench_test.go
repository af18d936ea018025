package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/workflows"
)

// benchLoop runs one graph whose loop node repeats b.N times and reports
// the wall time per visit of that node, on the real dev server with a
// real worker and a file blob store.
func benchLoop(b *testing.B, src string) {
	h := newHarness(b, "")
	h.startWorker()
	g, err := graph.Parse([]byte(fmt.Sprintf(src, b.N)), "bench.yaml")
	require.NoError(b, err)
	b.ResetTimer()
	start := time.Now()
	run, err := h.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: fmt.Sprintf("bench-%d", time.Now().UnixNano()), TaskQueue: workflows.TaskQueue},
		workflows.WorkflowType, &workflows.GraphRunInput{RunID: fmt.Sprintf("bench-%d", time.Now().UnixNano()), Graph: g})
	require.NoError(b, err)
	require.NoError(b, run.Get(context.Background(), nil))
	b.StopTimer()
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/visit")
}

// BenchmarkToolVisit is the floor: one regular activity and one local
// checkpoint per visit.
func BenchmarkToolVisit(b *testing.B) {
	benchLoop(b, `
name: bench
start: tick
nodes:
  - {id: tick, kind: tool, run: ["true"]}
  - {id: done, kind: end}
edges:
  - {from: tick, to: done, when: 'visits >= %d'}
  - {from: tick, to: tick}
`)
}

// BenchmarkPersistVisit is a persist agent visit after the first: restore
// the slot on some worker, execute and pack there, commit the slot.
func BenchmarkPersistVisit(b *testing.B) {
	benchLoop(b, `
name: bench
start: w
nodes:
  - {id: w, kind: agent, backend: scripted, session: persist, prompt: "go", script: ["ok {{.Turn}}"]}
  - {id: done, kind: end}
edges:
  - {from: w, to: done, when: 'visits >= %d'}
  - {from: w, to: w}
`)
}

// BenchmarkFreshVisit is an agent visit with no session to restore.
func BenchmarkFreshVisit(b *testing.B) {
	benchLoop(b, `
name: bench
start: w
nodes:
  - {id: w, kind: agent, backend: scripted, prompt: "go", script: ["ok"]}
  - {id: done, kind: end}
edges:
  - {from: w, to: done, when: 'visits >= %d'}
  - {from: w, to: w}
`)
}

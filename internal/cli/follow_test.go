package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// A completed run's last steps and what each node cost come from its
// result: --follow asks no worker to replay the closed run for them. The
// app here reaches no Temporal server, so a query would come back empty.
func TestFollowEndsFromTheResult(t *testing.T) {
	var out bytes.Buffer
	a := &app{cfg: config.Config{TemporalAddress: "127.0.0.1:1", Namespace: "default"}, out: &out, errOut: &out}
	f := &follower{a: a, out: &out, id: "r1", asked: map[string]bool{}, shown: map[string]string{}, printed: 1}
	used := agent.Usage{InputTokens: 1200, OutputTokens: 30}
	res := &runapi.GraphRunResult{
		RunID: "r1", Status: runstore.StatusCompleted, EndNode: "done", Visits: 3, Usage: used,
		Path: []runstore.Step{
			{Node: "writer", Visit: 1, Status: "ok", Outcome: runstore.OutcomeOK, Detail: "first"},
			{Node: "writer", Visit: 2, Status: "ok", Outcome: runstore.OutcomeOK, Detail: "second", Usage: used},
			{Node: "done", Visit: 1, Status: "ok", Outcome: runstore.OutcomeOK},
		},
		NodeUsage: map[string]agent.Usage{"writer": used}, NodeVisits: map[string]int{"writer": 2, "done": 1},
	}
	require.NoError(t, f.end(context.Background(), res, nil))
	got := out.String()
	assert.NotContains(t, got, "first", "a step printed before is not printed again")
	assert.Contains(t, got, "✓ writer           visit 2")
	assert.Contains(t, got, "✓ done")
	assert.Contains(t, got, "usage: run: 1.2k tokens (in 1200, out 30, cache read 0, cache write 0)")
	assert.Contains(t, got, "usage: writer (2 visits): ")
	assert.Contains(t, got, "run r1 completed at done after 3 visits")
}

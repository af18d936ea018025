package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

func TestProgressLine(t *testing.T) {
	p := agent.Progress{Node: "writer", Visit: 3, Activity: "Edit main.go",
		Usage: agent.Usage{InputTokens: 12000, OutputTokens: 400}, Elapsed: 38400 * time.Millisecond}
	assert.Equal(t, "writer visit 3 · Edit main.go · 12.4k tokens · 38 s", progressLine(p))
	assert.Equal(t, "writer visit 3 · Edit main.go · 12.4k tokens", progressKey(p), "the key leaves the clock out")
	p.Activity, p.Text = "", "first line\nand the   second"
	assert.Equal(t, `writer visit 3 · "first line and the second" · 12.4k tokens · 38 s`, progressLine(p))
	assert.Equal(t, "judge visit 1 · thinking", progressLine(agent.Progress{Node: "judge", Visit: 1}))
}

func TestHumanUnits(t *testing.T) {
	assert.Equal(t, "950 tokens", tokens(950))
	assert.Equal(t, "1.0k tokens", tokens(1000))
	assert.Equal(t, "2.5M tokens", tokens(2_500_000))
	assert.Equal(t, "0 s", duration(0))
	assert.Equal(t, "4 min 5 s", duration(245*time.Second))
	assert.Equal(t, "1 h 2 min", duration(3725*time.Second))
	assert.Equal(t, "1.2k tokens, $0.0123", usageText(agent.Usage{InputTokens: 1200, CostUSD: 0.0123, CostKnown: true}))
	assert.Equal(t, "1.2k tokens", usageText(agent.Usage{InputTokens: 1200}))
}

// A step shows its usage only from the output that is really its own.
func TestStepUsage(t *testing.T) {
	st := &runapi.State{
		Visits: map[string]int{"writer": 2},
		Outputs: map[string]map[string]any{"writer": {"text": "x", agent.UsageKey: map[string]any{
			"input_tokens": 10.0, "output_tokens": 5.0, "cost_usd": 0.5, "cost_known": true}}},
	}
	u, ok := stepUsage(st, "writer", 2, "ok")
	assert.True(t, ok)
	assert.Equal(t, agent.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 0.5, CostKnown: true}, u)
	_, ok = stepUsage(st, "writer", 1, "ok")
	assert.False(t, ok, "an earlier visit's step")
	_, ok = stepUsage(st, "writer", 2, "failed")
	assert.False(t, ok, "a failed visit left the output as it was")
	assert.Equal(t, []string{"writer visit 2: 15 tokens (in 10, out 5, cache read 0, cache write 0), $0.5000"}, nodeUsages(st))
}

// A step's line says how its visit ended and what it cost: a tool's exit
// code or timeout and its last lines, an agent's own usage, whichever
// visit of the node it was.
func TestStepLines(t *testing.T) {
	st := &runapi.State{Visits: map[string]int{"writer": 2}}
	w1 := runstore.Step{Node: "writer", Visit: 1, Status: "ok", Outcome: runstore.OutcomeOK, DurationMS: 1200, Detail: "drafted",
		Usage: agent.Usage{InputTokens: 1200, CostUSD: 0.0123, CostKnown: true}}
	assert.Equal(t, "✓ writer           visit 1   ok      1.2s  1.2k tokens, $0.0123  drafted", stepLine(st, w1))
	check := runstore.Step{Node: "check", Visit: 2, Status: "ok", Outcome: runstore.OutcomeExited, ExitCode: 1, DurationMS: 512, Detail: "--- FAIL: TestAdd ⏎ FAIL"}
	assert.Equal(t, "✗ check            visit 2   exit 1  512ms  --- FAIL: TestAdd ⏎ FAIL", stepLine(st, check))
	slow := runstore.Step{Node: "slow", Visit: 1, Status: "ok", Outcome: runstore.OutcomeTimedOut, ExitCode: -1, TimedOut: true, DurationMS: 2177}
	assert.Equal(t, "✗ slow             visit 1   timeout 2.177s", stepLine(st, slow))
	assert.Equal(t, "  check            visit 2   exit 1  512ms    --- FAIL: TestAdd ⏎ FAIL", pathLine(st, check))
	old := runstore.Step{Node: "judge", Visit: 1, Status: "failed", Detail: "boom"}
	assert.Equal(t, "✗ judge            visit 1   failed  0s  boom", stepLine(st, old), "a step recorded before outcomes")
}

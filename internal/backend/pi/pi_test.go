package pi_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/pi"
)

func TestPi(t *testing.T) {
	clitest.Run(t, clitest.Suite{
		Backend:            pi.Configured,
		SessionGlob:        "*_{id}.jsonl",
		MissingID:          "01a22c71-0000-7000-8000-000000000000",
		HiddenWhenReadOnly: []string{"write", "edit", "bash"},
	})
}

// With the model's price given, pi prices every call and the visit's cost
// is known: the sum over its calls at those rates.
func TestCostFromConfiguredPrice(t *testing.T) {
	ex := pi.New(pi.Options{Options: clitest.NewHarness(t).For(pi.Name), Cost: &pi.Cost{Input: 2, Output: 8, CacheRead: 0.5}})
	env := clitest.NewEnv(t)
	first, err := ex.Execute(context.Background(), agent.Request{Prompt: "alpha", Env: env})
	require.NoError(t, err)
	assert.True(t, first.Usage.CostKnown)
	assert.InDelta(t, (1020*2+8*8)/1e6, first.Usage.CostUSD, 1e-12)

	second, err := ex.Execute(context.Background(), agent.Request{Prompt: "beta", SessionID: first.SessionID, Env: env})
	require.NoError(t, err)
	assert.Equal(t, int64(1000), second.Usage.CacheReadTokens)
	assert.True(t, second.Usage.CostKnown)
	assert.InDelta(t, (40*2+10*8+1000*0.5)/1e6, second.Usage.CostUSD, 1e-12, "only the second visit's calls")
}

package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A limit is spent once what it counted before the visit and the visit's
// own spending go over a bound (at the bound is not over); tokens and cost
// add up apart, so a visit's tokens count before the CLI priced them; the
// first spent limit is the one named.
func TestLimitCrossed(t *testing.T) {
	l := Limit{Name: "the budget of node writer", MaxTokens: 1000, Spent: Usage{InputTokens: 300, OutputTokens: 100}}
	assert.Empty(t, l.Crossed(Usage{InputTokens: 600}), "1,000 is at the bound, not over it")
	assert.Equal(t, "the budget of node writer is spent: 1001 tokens used, max_tokens is 1000", l.Crossed(Usage{InputTokens: 601}))
	c := Limit{Name: "the run's budget", MaxCostUSD: 0.5, Spent: Usage{CostUSD: 0.3, CostKnown: true}}
	assert.Empty(t, c.Crossed(Usage{InputTokens: 1 << 40}), "tokens do not count against a cost bound")
	assert.Equal(t, "the run's budget is spent: $0.6000 used, max_cost_usd is $0.50", c.Crossed(Usage{CostUSD: 0.3}), "a cost the CLI has not called known still counts")
	assert.Equal(t, c.Crossed(Usage{CostUSD: 0.3}), Spent([]Limit{c, l}, Usage{InputTokens: 601, CostUSD: 0.3}))
	assert.Empty(t, Spent(nil, Usage{InputTokens: 1 << 40}))
	assert.Empty(t, Limit{Name: "none"}.Crossed(Usage{InputTokens: 1 << 40, CostUSD: 1e9}), "a limit without bounds is never spent")
}

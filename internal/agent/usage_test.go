package agent

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestUsageAdd(t *testing.T) {
	priced := Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.5, CostKnown: true}
	unpriced := Usage{InputTokens: 5, CacheReadTokens: 100}
	assert.Equal(t, priced, Usage{}.Add(priced), "the zero usage is the identity")
	assert.Equal(t, priced, priced.Add(Usage{}))
	assert.Equal(t, Usage{InputTokens: 20, OutputTokens: 4, CostUSD: 1, CostKnown: true}, priced.Add(priced))
	sum := priced.Add(unpriced)
	assert.Equal(t, Usage{InputTokens: 15, OutputTokens: 2, CacheReadTokens: 100}, sum, "one unpriced part makes the cost unknown")
	assert.Equal(t, int64(117), sum.Tokens())
}

func TestUsageSub(t *testing.T) {
	total := Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 50}
	assert.Equal(t, Usage{InputTokens: 60, OutputTokens: 4, CacheReadTokens: 50}, total.Sub(Usage{InputTokens: 40, OutputTokens: 6}))
	assert.Equal(t, Usage{OutputTokens: 10, CacheReadTokens: 50}, total.Sub(Usage{InputTokens: 400}), "never below zero")
}

func TestProgressBound(t *testing.T) {
	long := strings.Repeat("é", 500)
	p := Progress{Activity: "Bash " + long, Text: long + " end"}.Bound()
	assert.LessOrEqual(t, len(p.Activity), MaxProgressActivity)
	assert.LessOrEqual(t, len(p.Text), MaxProgressText)
	assert.True(t, utf8.ValidString(p.Activity) && utf8.ValidString(p.Text))
	assert.True(t, strings.HasPrefix(p.Activity, "Bash é"), p.Activity)
	assert.True(t, strings.HasSuffix(p.Activity, "…"))
	assert.True(t, strings.HasPrefix(p.Text, "…é"), p.Text)
	assert.True(t, strings.HasSuffix(p.Text, "é end"))
	short := Progress{Activity: "Edit main.go", Text: "done"}
	assert.Equal(t, short, short.Bound())
}

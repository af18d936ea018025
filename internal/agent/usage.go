package agent

// Usage is what a visit cost, as the agent CLI itself reported it. The
// token counts follow Anthropic's split, whatever the wire: InputTokens are
// the input tokens read neither from nor into the prompt cache, so the four
// counts add up to every token the model processed (an OpenAI-style total
// input is split into cache reads and the rest).
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// CostUSD is the CLI's own price of the visit; it is meaningful only
	// when CostKnown is true, and 0 otherwise.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// CostKnown says the CLI priced every call of the visit from a real
	// price table. It is false when the CLI reports no cost (Codex) or
	// priced a model it does not know (Claude Code's costBasis "unknown",
	// pi with a model that has no configured price).
	CostKnown bool `json:"cost_known,omitempty"`
}

// Tokens is every token the visit processed: input, output and both kinds
// of cache traffic.
func (u Usage) Tokens() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// IsZero reports a usage with nothing counted and no cost.
func (u Usage) IsZero() bool { return u == Usage{} }

// Add sums two usages. The sum's cost is known only when the cost of every
// part that counted anything is known; a zero part changes nothing, so
// summing from the zero value works.
func (u Usage) Add(v Usage) Usage {
	switch {
	case v.IsZero():
		return u
	case u.IsZero():
		return v
	}
	s := Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		CostKnown:        u.CostKnown && v.CostKnown,
	}
	if s.CostKnown {
		s.CostUSD = u.CostUSD + v.CostUSD
	}
	return s
}

// Sub is what u counted beyond base (every count at least 0): the usage of
// one visit when a CLI reports a conversation's running total. Cost is not
// subtracted: a CLI that reports running totals reports no cost.
func (u Usage) Sub(base Usage) Usage {
	d := func(a, b int64) int64 { return max(a-b, 0) }
	return Usage{
		InputTokens:      d(u.InputTokens, base.InputTokens),
		OutputTokens:     d(u.OutputTokens, base.OutputTokens),
		CacheReadTokens:  d(u.CacheReadTokens, base.CacheReadTokens),
		CacheWriteTokens: d(u.CacheWriteTokens, base.CacheWriteTokens),
	}
}

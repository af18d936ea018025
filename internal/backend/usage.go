package backend

import (
	"strings"
	"time"
	"unicode/utf8"
)

// UsageKey is the reserved output key under which a visit's Usage rides on
// the agent's output map (as the JSON of Usage). Like every key starting
// with "_", it never travels along an edge unless a mapping names it.
const UsageKey = "_usage"

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

// Bounds of a Progress value, so that it rides on every heartbeat of a
// visit however long the visit runs.
const (
	// MaxProgressText is the most of the reply text a Progress keeps (its
	// tail).
	MaxProgressText = 200
	// MaxProgressActivity is the longest activity a Progress keeps.
	MaxProgressActivity = 120
)

// Progress is what a running visit has done so far. It is small and
// bounded (see Bound): the worker sends the latest one as the visit
// activity's heartbeat details, and `tether status` shows it.
type Progress struct {
	Node    string `json:"node,omitempty"`
	Visit   int    `json:"visit,omitempty"`
	Backend string `json:"backend,omitempty"`
	// Activity is the agent's latest tool call, with its main argument:
	// "Edit main.go", "Bash go test ./...". Empty until the first call.
	Activity string `json:"activity,omitempty"`
	// ToolCalls counts the tool calls so far.
	ToolCalls int `json:"tool_calls,omitempty"`
	// Text is the tail of the agent's latest reply text.
	Text string `json:"text,omitempty"`
	// Usage is what the CLI has reported so far; its cost may lag until
	// the visit ends.
	Usage Usage `json:"usage"`
	// Elapsed is how long the visit has run.
	Elapsed time.Duration `json:"elapsed"`
}

// Bound cuts the free-text fields to their limits: the activity keeps its
// head, the text its tail, both on rune boundaries.
func (p Progress) Bound() Progress {
	p.Activity = Head(p.Activity, MaxProgressActivity)
	p.Text = Tail(p.Text, MaxProgressText)
	return p
}

// Head is s cut to at most n bytes on a rune boundary, with "…" when cut.
func Head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n-len("…")]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// Tail is the last n bytes of s at most, on a rune boundary, with "…" in
// front when cut.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n+len("…"):]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return "…" + strings.TrimLeft(s, " \n")
}

package agent

import (
	"strings"
	"time"
	"unicode/utf8"
)

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

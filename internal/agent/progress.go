package agent

import (
	"slices"
	"time"

	"github.com/tether-run/tether/internal/excerpt"
)

// Bounds of a Progress value, so that it rides on every heartbeat of a
// visit however long the visit runs.
const (
	// MaxProgressText is the most of the reply text a Progress keeps (its
	// tail).
	MaxProgressText = 200
	// MaxProgressActivity is the longest activity a Progress keeps.
	MaxProgressActivity = 120
	// MaxProgressCalls and MaxProgressFiles are how many of the latest
	// tool calls, and of the files written or edited, a Progress keeps:
	// what a later attempt of an interrupted visit is told it had started.
	MaxProgressCalls = 8
	MaxProgressFiles = 8
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
	// Calls are the latest tool calls, named as Activity names them,
	// oldest first; Files the files the agent wrote, edited or deleted, in
	// the order it first changed them. Both are bounded (Bound).
	Calls []string `json:"calls,omitempty"`
	Files []string `json:"files,omitempty"`
	// Interrupted is what earlier attempts of this visit did before their
	// workers were lost. Every heartbeat of the attempt carries it, so
	// that an attempt after this one, should it be lost too, still knows.
	Interrupted *Interruption `json:"interrupted,omitempty"`
}

// Same reports whether p and q say the same thing.
func (p Progress) Same(q Progress) bool {
	return p.Node == q.Node && p.Visit == q.Visit && p.Backend == q.Backend && p.Activity == q.Activity &&
		p.ToolCalls == q.ToolCalls && p.Text == q.Text && p.Usage == q.Usage && p.Elapsed == q.Elapsed &&
		slices.Equal(p.Calls, q.Calls) && slices.Equal(p.Files, q.Files) && p.Interrupted.same(q.Interrupted)
}

// AddCall records a tool call named as Activity names it, and, when the
// call changes a file (fileTools), that file.
func (p *Progress) AddCall(tool, arg, activity string) {
	p.Activity = activity
	p.ToolCalls++
	p.Calls = append(slices.Clone(p.Calls), activity)
	if over := len(p.Calls) - MaxProgressCalls; over > 0 {
		p.Calls = p.Calls[over:]
	}
	if fileTools[tool] && arg != "" && !slices.Contains(p.Files, arg) && len(p.Files) < MaxProgressFiles {
		p.Files = append(slices.Clone(p.Files), excerpt.Head(arg, MaxProgressActivity))
	}
}

// fileTools are the tool names (as the backends report them) that write,
// edit or delete the file their main argument names.
var fileTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true, "Delete": true}

// Bound cuts the free-text fields to their limits: the activity keeps its
// head, the text its tail, both on rune boundaries.
func (p Progress) Bound() Progress {
	p.Activity = excerpt.Head(p.Activity, MaxProgressActivity)
	p.Text = excerpt.Tail(p.Text, MaxProgressText)
	p.Calls = boundList(p.Calls, MaxProgressCalls, true)
	p.Files = boundList(p.Files, MaxProgressFiles, false)
	if p.Interrupted != nil {
		i := p.Interrupted.Bound()
		p.Interrupted = &i
	}
	return p
}

// boundList keeps at most n entries of list, each cut to
// MaxProgressActivity: the last n when latest, else the first n.
func boundList(list []string, n int, latest bool) []string {
	if len(list) == 0 {
		return nil
	}
	switch {
	case len(list) <= n:
	case latest:
		list = list[len(list)-n:]
	default:
		list = list[:n]
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = excerpt.Head(s, MaxProgressActivity)
	}
	return out
}

package cliexec

import (
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/excerpt"
)

// Tracker gathers one visit's progress as an executor's reader of the CLI's
// output learns it, and reports each change to the request's Progress func.
// Its methods are safe for concurrent use; a Tracker for a request without
// a Progress func only keeps the value.
type Tracker struct {
	report  func(agent.Progress)
	workdir string
	start   time.Time

	mu sync.Mutex
	p  agent.Progress
}

// NewTracker starts tracking a visit of req by backendName.
func NewTracker(backendName string, req agent.Request) *Tracker {
	return &Tracker{
		report:  req.Progress,
		workdir: req.Env.Workdir,
		start:   time.Now(),
		p:       agent.Progress{Node: req.NodeID, Visit: req.Visit, Backend: backendName},
	}
}

// ToolCall records a tool call: name is the CLI's tool name, arg its main
// argument (a path, a command, a pattern), which may be empty.
func (t *Tracker) ToolCall(name, arg string) {
	t.update(func(p *agent.Progress) {
		rel := t.relative(arg)
		p.AddCall(name, rel, Activity(name, rel))
	})
}

// Say replaces the reply text with text (a whole message or block).
func (t *Tracker) Say(text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	t.update(func(p *agent.Progress) { p.Text = excerpt.Tail(strings.TrimSpace(text), agent.MaxProgressText) })
}

// SetUsage records the usage so far.
func (t *Tracker) SetUsage(u agent.Usage) {
	t.update(func(p *agent.Progress) { p.Usage = u })
}

// Progress is the latest progress.
func (t *Tracker) Progress() agent.Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.p
	p.Elapsed = time.Since(t.start).Round(time.Millisecond)
	return p
}

func (t *Tracker) update(change func(*agent.Progress)) {
	t.mu.Lock()
	before := t.p
	change(&t.p)
	changed := !t.p.Same(before)
	t.mu.Unlock()
	if changed && t.report != nil {
		t.report(t.Progress())
	}
}

// relative shows a path inside the working directory relative to it.
func (t *Tracker) relative(arg string) string {
	if t.workdir == "" || !filepath.IsAbs(arg) {
		return arg
	}
	if rel, err := filepath.Rel(t.workdir, arg); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return arg
}

// Activity is how a progress line names a tool call: the tool, then the
// first line of its main argument, cut to agent.MaxProgressActivity.
func Activity(tool, arg string) string {
	arg, _, cut := strings.Cut(strings.TrimSpace(arg), "\n")
	if cut {
		arg += " …"
	}
	if arg == "" {
		return excerpt.Head(tool, agent.MaxProgressActivity)
	}
	return excerpt.Head(tool+" "+arg, agent.MaxProgressActivity)
}

// MainArg picks a tool call's main argument from its input: the first of
// the usual keys that holds a string.
func MainArg(input map[string]any) string {
	for _, k := range []string{"file_path", "path", "notebook_path", "command", "cmd", "pattern", "url", "query", "description", "prompt"} {
		if s, ok := input[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

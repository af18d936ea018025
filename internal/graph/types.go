// Package graph defines Tether's graph DSL: the types a graph file decodes
// into, parsing from YAML with positions, encoding back, and validation that
// reports every problem at once with a stable code.
//
// A Graph value is plain data: it is what travels into the GraphRun workflow
// as input, so it must stay JSON-serialisable and free of behaviour that
// depends on the machine that decoded it.
package graph

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/agent"
)

// Graph is one workflow graph: nodes joined by edges, entered at Start.
type Graph struct {
	Name   string  `json:"name" yaml:"name"`
	Start  string  `json:"start" yaml:"start"`
	Inputs []Input `json:"inputs,omitempty" yaml:"inputs,omitempty"`
	// Workspace, when set, is what the run's workspace starts from.
	Workspace *WorkspaceSource `json:"workspace,omitempty" yaml:"workspace,omitempty"`
	// Budget, when set, bounds what the whole run may spend.
	Budget *Budget `json:"budget,omitempty" yaml:"budget,omitempty"`
	// Notify, when set, says which of the run's notices go to which of
	// the workers' endpoints (notify.go); `notify: []` sends none.
	Notify NotifyRoutes `json:"notify,omitzero" yaml:"notify,omitempty"`
	// Publish, when set, is where the run's work goes: a pull request,
	// opened before each review node waits and updated at the end
	// (publish.go).
	Publish *Publish `json:"publish,omitempty" yaml:"publish,omitempty"`
	Nodes   []Node   `json:"nodes" yaml:"nodes"`
	Edges   []Edge   `json:"edges,omitempty" yaml:"edges,omitempty"`

	// Source says where each part of the graph was written; Parse sets it
	// so that problems can point at a line and column. Like Pos, it is
	// never encoded.
	Source *Source `json:"-" yaml:"-"`
}

// WorkspaceSource says what a run's workspace starts from: From is a
// directory, or a git repository path or URL, and Ref the git ref to check
// out when From is a repository. Both are templates over .input.
type WorkspaceSource struct {
	From string `json:"from,omitempty" yaml:"from,omitempty"`
	Ref  string `json:"ref,omitempty" yaml:"ref,omitempty"`
}

// Render fills the source's templates with a run's inputs (defaults
// applied). An empty From means the run starts with an empty workspace.
func (s WorkspaceSource) Render(inputs map[string]any) (from, ref string, err error) {
	data := PromptData{Input: inputs}
	if from, err = RenderPrompt(s.From, data); err != nil {
		return "", "", fmt.Errorf("workspace.from: %w", err)
	}
	if ref, err = RenderPrompt(s.Ref, data); err != nil {
		return "", "", fmt.Errorf("workspace.ref: %w", err)
	}
	return strings.TrimSpace(from), strings.TrimSpace(ref), nil
}

// WithDefaults returns a copy of inputs with the graph's declared default
// of every input they do not give.
func (g *Graph) WithDefaults(inputs map[string]any) map[string]any {
	out := maps.Clone(inputs)
	if out == nil {
		out = map[string]any{}
	}
	for _, in := range g.Inputs {
		if _, given := out[in.Name]; !given && in.Default != nil {
			out[in.Name] = in.Default
		}
	}
	return out
}

// Budget bounds spending, as the agent CLIs report it: tokens of every
// kind (input, output, cache), and cost in US dollars where the CLI prices
// its calls. A zero field sets no bound.
type Budget struct {
	MaxCostUSD float64 `json:"max_cost_usd,omitempty" yaml:"max_cost_usd,omitempty"`
	MaxTokens  int64   `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
}

// Input declares one run input and its default.
type Input struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	Required    bool   `json:"required,omitempty" yaml:"required,omitempty"`
	Default     any    `json:"default,omitempty" yaml:"default,omitempty"`
	// Type is what `tether run --input NAME=VALUE` makes of VALUE: one of
	// InputTypes; "" is InputString (the text as written).
	Type string `json:"type,omitempty" yaml:"type,omitempty"`
}

// Kind is what a node does when visited.
type Kind string

// Node kinds.
const (
	KindAgent Kind = "agent"
	KindHuman Kind = "human"
	KindTool  Kind = "tool"
	KindJoin  Kind = "join"
	KindEnd   Kind = "end"
	// KindReview waits, like a human node, for a review of the run's pull
	// request (publish.go): its answers come from the pull request.
	KindReview Kind = "review"
)

// Kinds lists every node kind, in documentation order.
var Kinds = []Kind{KindAgent, KindHuman, KindTool, KindJoin, KindEnd, KindReview}

// FanoutAll makes a node take every matching edge concurrently.
const FanoutAll = "all"

// MaxBranches bounds the branches one fan-out may open: each holds a
// working directory on some worker and a line of the run's history.
const MaxBranches = 16

// Node is one vertex of the graph.
type Node struct {
	ID        string `json:"id" yaml:"id"`
	Kind      Kind   `json:"kind" yaml:"kind"`
	MaxVisits int    `json:"max_visits,omitempty" yaml:"max_visits,omitempty"`
	Fanout    string `json:"fanout,omitempty" yaml:"fanout,omitempty"`

	// Agent nodes.
	Backend  string      `json:"backend,omitempty" yaml:"backend,omitempty"`
	Fallback []string    `json:"fallback,omitempty" yaml:"fallback,omitempty"`
	Session  SessionMode `json:"session,omitempty" yaml:"session,omitempty"`
	Prompt   string      `json:"prompt,omitempty" yaml:"prompt,omitempty"`
	Script   []string    `json:"script,omitempty" yaml:"script,omitempty"`
	Model    string      `json:"model,omitempty" yaml:"model,omitempty"`
	Workdir  string      `json:"workdir,omitempty" yaml:"workdir,omitempty"`
	// Permissions is one of catalogue.Permissions(); empty keeps the
	// worker's default.
	Permissions string `json:"permissions,omitempty" yaml:"permissions,omitempty"`
	// Tools and DisallowedTools list the backend's own tool names.
	Tools              []string `json:"tools,omitempty" yaml:"tools,omitempty"`
	DisallowedTools    []string `json:"disallowed_tools,omitempty" yaml:"disallowed_tools,omitempty"`
	SystemPrompt       string   `json:"system_prompt,omitempty" yaml:"system_prompt,omitempty"`
	AppendSystemPrompt string   `json:"append_system_prompt,omitempty" yaml:"append_system_prompt,omitempty"`
	// AskUser false gives the agent no way to ask a person (no ask_user
	// tool, no reply convention): its visits never wait on an answer,
	// and a CLI with an MCP client starts without Tether's MCP server.
	// Nil or true: the agent may ask.
	AskUser *bool `json:"ask_user,omitempty" yaml:"ask_user,omitempty"`

	// Human nodes. An empty answer is refused unless AllowEmpty.
	Question   string `json:"question,omitempty" yaml:"question,omitempty"`
	AllowEmpty bool   `json:"allow_empty,omitempty" yaml:"allow_empty,omitempty"`
	// Options are the answers a notice offers as buttons and one-click
	// links; any other text is still an answer.
	Options []string `json:"options,omitempty" yaml:"options,omitempty"`

	// Tool nodes.
	Run []string `json:"run,omitempty" yaml:"run,omitempty"`

	// Agent and tool nodes. Env names worker environment variables passed
	// to the agent CLI or the tool (names only, never values); Timeout
	// bounds one visit.
	Env     []string `json:"env,omitempty" yaml:"env,omitempty"`
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// Network is what the node's processes may reach (nil: the default,
	// NetworkModel for an agent, NetworkNone for a tool); Limits bound
	// what one visit may use (nil: the worker's defaults).
	Network *Network `json:"network,omitempty" yaml:"network,omitempty"`
	Limits  *Limits  `json:"limits,omitempty" yaml:"limits,omitempty"`

	// Budget, on an agent node, bounds what its visits together may spend.
	Budget *Budget `json:"budget,omitempty" yaml:"budget,omitempty"`

	// Workspace, on a join node, says what the run's workspace is after the
	// join: nil or {Mode: "trunk"} keeps the trunk's (what it was at the fan-out);
	// pick keeps one branch's files; merge merges every branch into the trunk.
	Workspace *JoinWorkspace `json:"workspace,omitempty" yaml:"workspace,omitempty"`

	// Publish, on an end node, publishes the run's work when the run ends
	// there (in place of the graph's publish, if any).
	Publish *Publish `json:"publish,omitempty" yaml:"publish,omitempty"`

	// Pos is where the node was declared; it is not part of the graph's
	// identity and never encoded.
	Pos Pos `json:"-" yaml:"-"`
}

// Mentions reports whether the node's prompt or command holds s (a
// template field such as ".workspace.diff"): what is costly to compute for
// a visit is computed only for nodes that use it.
func (n Node) Mentions(s string) bool {
	return strings.Contains(n.Prompt, s) || slices.ContainsFunc(n.Run, func(a string) bool { return strings.Contains(a, s) })
}

// AgentSettings are the node's agent settings, for agent.Request.
func (n Node) AgentSettings() agent.Settings {
	return agent.Settings{
		Permissions:        n.Permissions,
		Tools:              n.Tools,
		DisallowedTools:    n.DisallowedTools,
		SystemPrompt:       n.SystemPrompt,
		AppendSystemPrompt: n.AppendSystemPrompt,
		NoAskUser:          n.AskUser != nil && !*n.AskUser,
		Env:                n.Env,
		Timeout:            time.Duration(n.Timeout),
	}
}

// Edge joins two nodes. When is an expr-lang boolean over output, input and
// visits; an empty When always matches. With maps the next node's input
// keys to values: a string is an expression, any other value a literal.
type Edge struct {
	From string         `json:"from" yaml:"from"`
	To   string         `json:"to" yaml:"to"`
	When string         `json:"when,omitempty" yaml:"when,omitempty"`
	With map[string]any `json:"with,omitempty" yaml:"with,omitempty"`

	Pos Pos `json:"-" yaml:"-"`
}

// Pos is a 1-based line:column in the graph file.
type Pos struct {
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Column) }

// Node returns the node with the given id.
func (g *Graph) Node(id string) (*Node, bool) {
	for i := range g.Nodes {
		if g.Nodes[i].ID == id {
			return &g.Nodes[i], true
		}
	}
	return nil, false
}

// EdgesFrom returns the edges leaving id, in declaration order.
func (g *Graph) EdgesFrom(id string) []Edge {
	var out []Edge
	for _, e := range g.Edges {
		if e.From == id {
			out = append(out, e)
		}
	}
	return out
}

// SessionMode says which conversation an agent node continues on a visit.
// The order of the constants is part of the format: persist was appended
// last, as ADR-089 requires, so the numeric values of the others never move.
type SessionMode int

// Session modes.
const (
	SessionFresh SessionMode = iota
	SessionInherit
	SessionFork
	SessionPersist
)

var sessionNames = []string{"fresh", "inherit", "fork", "persist"}

// SessionModes lists every mode's name, in declaration order.
func SessionModes() []string { return append([]string(nil), sessionNames...) }

func (m SessionMode) String() string {
	if m < 0 || int(m) >= len(sessionNames) {
		return fmt.Sprintf("SessionMode(%d)", int(m))
	}
	return sessionNames[m]
}

// ParseSessionMode maps a lowercase name to its mode.
func ParseSessionMode(s string) (SessionMode, error) {
	for i, n := range sessionNames {
		if n == s {
			return SessionMode(i), nil
		}
	}
	return 0, fmt.Errorf("graph: unknown session mode %q (want one of %s)", s, strings.Join(sessionNames, ", "))
}

// MarshalText encodes the lowercase name, for JSON and YAML alike.
func (m SessionMode) MarshalText() ([]byte, error) {
	if m < 0 || int(m) >= len(sessionNames) {
		return nil, fmt.Errorf("graph: invalid session mode %d", int(m))
	}
	return []byte(sessionNames[m]), nil
}

// UnmarshalText decodes the lowercase name.
func (m *SessionMode) UnmarshalText(b []byte) error {
	v, err := ParseSessionMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Duration is a time.Duration written as a Go duration string ("90s").
type Duration time.Duration

// MarshalText encodes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText decodes a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("graph: bad duration %q: %w", b, err)
	}
	*d = Duration(v)
	return nil
}

// IsZero lets omitempty drop an unset duration.
func (d Duration) IsZero() bool { return d == 0 }

// FromJSON reads a graph from its JSON, as a run's checkpoint keeps it
// (runstore.Checkpoint.Graph) and a workflow's input carries it: the
// graph validated when the run started, not validated again. Empty
// input is the empty graph, as a checkpoint without one decoded before
// the run store kept the graph as bytes.
func FromJSON(b []byte) (*Graph, error) {
	var g Graph
	if len(b) == 0 {
		return &g, nil
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("graph: read a run's graph: %w", err)
	}
	return &g, nil
}

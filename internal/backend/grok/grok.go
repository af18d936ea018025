// Package grok is the grok backend: it runs `grok --prompt` (the
// @vibe-kit/grok-cli package) headless against an OpenAI-compatible chat
// completions endpoint, and reads the conversation the CLI prints when it
// ends, one JSON message a line.
//
// The CLI keeps no conversation on disk and cannot resume one, so the
// backend has no session layout and no persist capability (ADR-089): every
// visit runs fresh, and a persist node on grok is run fresh with its
// inbound session keys stripped. It has no permission modes, tool lists or
// system prompt flag either (headless, it approves every tool call), so a
// node that sets them is refused by validation rather than run looser than
// it asked.
//
// Its MCP servers come only from the working directory's
// .grok/settings.json, which is the run's workspace, so ask_user is the
// reply convention pi uses: a final reply whose last lines all start with
// "ASK_USER:" pauses the visit with those questions, and the answer comes
// back in the next (fresh) visit's prompt.
package grok

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/grok/facts"
)

const (
	// Name is the backend's name in graphs and the catalogue.
	Name = facts.Name
	// AskUserPrefix starts each question line of the ask_user convention.
	AskUserPrefix = cliexec.AskUserPrefix
	// DefaultMaxToolRounds bounds the model calls of one visit.
	DefaultMaxToolRounds = 100
)

// AskUserInstructions end every prompt when AskUserConvention is on: the
// CLI has no flag for a system prompt.
const AskUserInstructions = "(When you need information, a decision or an approval that only the human user can give, " +
	"end your reply with one line per question, each of the form `ASK_USER: <question>`, and write nothing after them.)"

// Options configure the executor. BaseURL is the chat completions endpoint
// (with its /v1; empty: the CLI's default, api.x.ai), which the CLI
// reaches through the worker's model relay; APIKey stays with the relay,
// and the CLI gets a placeholder as GROK_API_KEY in its environment, never
// on its command line, which would make it save it in its settings file.
type Options struct {
	cliexec.Options
	// MaxToolRounds bounds the model calls of one visit (default
	// DefaultMaxToolRounds).
	MaxToolRounds int
	// AskUserConvention turns the ask_user convention on.
	AskUserConvention bool
}

// New returns an executor: the visit every CLI runs, with grok's options
// as its driver. It has no layout: grok keeps no conversation Tether
// could carry. Its MCP servers would have to live in the workspace: its
// ask_user is the reply convention.
func New(opts Options) *cliexec.Executor {
	if opts.MaxToolRounds <= 0 {
		opts.MaxToolRounds = DefaultMaxToolRounds
	}
	return cliexec.New(facts.Backend, opts.Options, opts, nil, opts.AskUserConvention)
}

// Configured is the executor as the worker's configuration sets it up.
func Configured(o cliexec.Options) agent.Backend {
	return New(Options{Options: o, AskUserConvention: true})
}

// Conversation is what defines a visit's conversation: the model and the
// ask_user convention.
func (o Options) Conversation(c *cliexec.CLI, req agent.Request) cliexec.Conversation {
	conv := cliexec.Conversation{Model: c.ModelFor(req.Model)}
	if o.AskUserConvention && cliexec.Asks(req) {
		conv.AppendSystemPrompt = AskUserInstructions
	}
	return conv
}

// Launch says how visit v runs the CLI: the prompt is an argument, with
// the ask_user convention's instructions after it (the CLI has no flag
// for a system prompt).
func (o Options) Launch(_ context.Context, c *cliexec.CLI, req agent.Request, v *cliexec.Visit) (cliexec.Launch, error) {
	prompt := v.Prompt
	if o.AskUserConvention && cliexec.Asks(req) {
		prompt += "\n\n" + AskUserInstructions
	}
	args := []string{
		// "=" keeps a prompt that starts with "-" a value, not a flag.
		"--prompt=" + prompt,
		"--directory", req.Env.Workdir,
		"--max-tool-rounds", strconv.Itoa(o.MaxToolRounds),
	}
	if v.Model != "" {
		args = append(args, "--model", v.Model)
	}
	set := []string{}
	if v.BaseURL != "" {
		set = append(set, "GROK_BASE_URL="+v.BaseURL)
	}
	if v.APIKey != "" {
		set = append(set, "GROK_API_KEY="+v.APIKey)
	}
	return cliexec.Launch{Args: args, Env: set, PromptInArgs: true, Output: &stream{track: cliexec.NewTracker(Name, req)}}, nil
}

// The CLI's own words for a visit that did not finish: a failed model call
// (it prints the user's message and this, and exits 0) and a visit that
// ran out of tool rounds.
const (
	failedCall     = "Sorry, I encountered an error: "
	outOfToolRound = "Maximum tool execution rounds reached."
)

// stream reads the messages `grok --prompt` prints as it ends: the user's,
// each assistant message with its tool calls, each tool result.
type stream struct {
	text     string
	failure  string
	messages int
	track    *cliexec.Tracker
}

type message struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Report is what the messages said about the visit. The CLI prints no
// usage: a visit's tokens and price are unknown.
func (s *stream) Report() cliexec.Report {
	return cliexec.Report{Text: s.text, Failure: s.failure, Failed: s.failure != ""}
}

// Line reads one message.
func (s *stream) Line(b []byte) {
	var m message
	if json.Unmarshal(b, &m) != nil || m.Role == "" {
		return
	}
	s.messages++
	if m.Role != "assistant" {
		return
	}
	for _, tc := range m.ToolCalls {
		var args map[string]any
		_ = json.Unmarshal([]byte(tc.Function.Arguments), &args)
		s.track.ToolCall(tc.Function.Name, cliexec.MainArg(args))
	}
	switch {
	case len(m.ToolCalls) > 0:
	case s.messages == 2 && strings.HasPrefix(m.Content, failedCall):
		// Only the user's message came before: the first model call
		// failed, and the CLI dropped whatever else the visit did.
		s.failure = "model call failed: " + strings.TrimPrefix(m.Content, failedCall)
	case m.Content == outOfToolRound:
		s.failure = "the visit used all its tool rounds without a final reply"
	case strings.HasPrefix(m.Content, "Error: ") && s.messages == 1:
		// The CLI's failure before any conversation (it exits 1).
		s.failure = strings.TrimPrefix(m.Content, "Error: ")
	case m.Content != "":
		s.text = m.Content
		s.track.Say(s.text)
	}
}

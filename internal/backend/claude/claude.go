// Package claude is the claude_code backend: it runs Claude Code
// non-interactively (`claude -p --output-format stream-json`) with an
// explicit state root (CLAUDE_CONFIG_DIR) and working directory, resumes and
// forks its sessions with --resume/--fork-session, serves it the ask_user
// tool over MCP, and reports the session id from the CLI's own output.
package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/askuser"
	"github.com/tether-run/tether/internal/backend/claude/facts"
	"github.com/tether-run/tether/internal/backend/cliexec"
)

// Name is the backend's name in graphs and the catalogue.
const Name = facts.Name

// Options configure the executor. The zero value runs `claude` from PATH
// against the CLI's default endpoint with no key of its own.
type Options struct {
	// Options are what every CLI executor takes. BaseURL is the Messages
	// API endpoint, empty for the CLI's default; the CLI reaches it
	// through the worker's model relay (ANTHROPIC_BASE_URL), which holds
	// APIKey and gives the CLI a placeholder as ANTHROPIC_API_KEY.
	cliexec.Options
	// SystemPrompt replaces Claude Code's system prompt; AppendSystemPrompt
	// is added to it.
	SystemPrompt       string
	AppendSystemPrompt string
	// Tools limits the built-in tools (--tools); nil keeps the CLI's set.
	Tools           []string
	AllowedTools    []string
	DisallowedTools []string
	// PermissionMode is --permission-mode (acceptEdits, bypassPermissions,
	// ...); empty keeps the CLI's default. bypassPermissions as root sets
	// IS_SANDBOX=1, which the CLI requires there. A node's permissions
	// override it (see PermissionModes).
	PermissionMode string
}

// New returns an executor: the visit every CLI runs, with Claude Code's
// options as its driver.
func New(opts Options) *cliexec.Executor {
	return cliexec.New(facts.Backend, opts.Options, opts, sessionLayout, false)
}

// Configured is the executor as the worker's configuration sets it up.
func Configured(o cliexec.Options) agent.Backend {
	return New(Options{Options: o, PermissionMode: o.Vars[facts.PermissionModeVar]})
}

// AskUserTool is the name Claude Code gives the ask_user MCP tool.
const AskUserTool = "mcp__" + askuser.ServerName + "__" + askuser.ToolName

// PermissionModes maps a node's permission level to Claude Code's
// --permission-mode (declared with the backend's facts).
var PermissionModes = facts.PermissionModes

// visitSettings is what one visit runs with: the node's settings over the
// executor's options.
type visitSettings struct {
	cliexec.Merged
	permissionMode string
}

func (o Options) settings(c *cliexec.CLI, req agent.Request) visitSettings {
	return visitSettings{Merged: c.Merge(req, cliexec.Defaults{SystemPrompt: o.SystemPrompt, AppendSystemPrompt: o.AppendSystemPrompt, Tools: o.Tools, DisallowedTools: o.DisallowedTools}), permissionMode: cliexec.Pick(PermissionModes[req.Settings.Permissions], o.PermissionMode)}
}

// Conversation is what defines the conversation a visit of req runs.
func (o Options) Conversation(c *cliexec.CLI, req agent.Request) cliexec.Conversation {
	v := o.settings(c, req)
	conv := v.Conversation(v.permissionMode)
	conv.AllowedTools, conv.MCPTools = o.AllowedTools, c.MCPTools(req)
	return conv
}

// Launch says how visit v of req runs the CLI.
func (o Options) Launch(_ context.Context, c *cliexec.CLI, req agent.Request, v *cliexec.Visit) (cliexec.Launch, error) {
	args, err := o.args(c, req, v)
	if err != nil {
		return cliexec.Launch{}, err
	}
	st := &stream{track: cliexec.NewTracker(Name, req)}
	return cliexec.Launch{Args: args, Env: o.env(c, req, v), Output: st,
		Gone: func(stderr string) bool { return missingSession(stderr, st.errors) }}, nil
}

func (o Options) args(c *cliexec.CLI, req agent.Request, visit *cliexec.Visit) ([]string, error) {
	v := o.settings(c, req)
	a := []string{"-p", "--output-format", "stream-json", "--verbose", "--strict-mcp-config"}
	if visit.Model != "" {
		a = append(a, "--model", visit.Model)
	}
	if req.SessionID != "" {
		a = append(a, "--resume", req.SessionID)
		if req.Fork {
			a = append(a, "--fork-session")
		}
	}
	if v.SystemPrompt != "" {
		a = append(a, "--system-prompt", v.SystemPrompt)
	}
	if v.AppendSystemPrompt != "" {
		a = append(a, "--append-system-prompt", v.AppendSystemPrompt)
	}
	if v.Tools != nil {
		a = append(a, "--tools", strings.Join(v.Tools, ","))
	}
	if v.permissionMode != "" {
		a = append(a, "--permission-mode", v.permissionMode)
	}
	allowed := append([]string(nil), o.AllowedTools...)
	if ask := c.AskUserFor(req); ask != nil {
		cmd := askuser.Command(ask, visit.Record)
		cfg := map[string]any{"mcpServers": map[string]any{askuser.ServerName: map[string]any{
			"type": "stdio", "command": cmd[0], "args": cmd[1:],
			// Load the tool up front: deferred MCP tools are only
			// reachable through tool search.
			"alwaysLoad": true,
		}}}
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		p, err := visit.WriteFile("mcp.json", b)
		if err != nil {
			return nil, fmt.Errorf("claude_code: %w", err)
		}
		a = append(a, "--mcp-config", p)
		allowed = append(allowed, AskUserTool)
	}
	if len(allowed) > 0 {
		a = append(a, "--allowedTools", strings.Join(allowed, ","))
	}
	if len(v.DisallowedTools) > 0 {
		a = append(a, "--disallowedTools", strings.Join(v.DisallowedTools, ","))
	}
	return a, nil
}

// env is what the executor sets in the CLI's environment: the visit's
// root, endpoint and key (the model relay's and the visit's placeholder).
func (o Options) env(c *cliexec.CLI, req agent.Request, visit *cliexec.Visit) []string {
	env := req.Env
	set := []string{
		"CLAUDE_CONFIG_DIR=" + env.StateRoot,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
	if visit.APIKey != "" {
		set = append(set, "ANTHROPIC_API_KEY="+visit.APIKey)
	}
	if visit.BaseURL != "" {
		set = append(set, "ANTHROPIC_BASE_URL="+visit.BaseURL)
	}
	if o.settings(c, req).permissionMode == "bypassPermissions" && os.Geteuid() == 0 {
		set = append(set, "IS_SANDBOX=1")
	}
	return set
}

func missingSession(stderr string, errs []string) bool {
	const msg = "No conversation found"
	if strings.Contains(stderr, msg) {
		return true
	}
	for _, e := range errs {
		if strings.Contains(e, msg) {
			return true
		}
	}
	return false
}

// Report is what the stream said about the visit. Claude Code puts API
// errors in its error result, on stdout: they go before the stderr tail.
func (s *stream) Report() cliexec.Report {
	r := cliexec.Report{SessionID: s.sessionID, Text: s.result, Usage: s.usage(), AskUserID: s.askUserID, Failed: s.isError}
	if s.isError || len(s.errors) > 0 {
		parts := append([]string(nil), s.errors...)
		if s.result != "" {
			parts = append(parts, s.result)
		}
		r.Failure = strings.Join(parts, "\n")
	}
	return r
}

// stream follows Claude Code's stream-json output.
type stream struct {
	sessionID string
	result    string
	isError   bool
	errors    []string
	askUserID string

	track *cliexec.Tracker
	// messages holds the usage of each API response by message id: the CLI
	// repeats a response's usage on every content block it prints.
	messages map[string]agent.Usage
	// counted is the sum of the results' per-process model usage, and
	// reported says a result carried one.
	counted  agent.Usage
	reported bool
}

type event struct {
	Type      string   `json:"type"`
	Subtype   string   `json:"subtype"`
	SessionID string   `json:"session_id"`
	Result    string   `json:"result"`
	IsError   bool     `json:"is_error"`
	Errors    []string `json:"errors"`
	Message   struct {
		ID      string `json:"id"`
		Content []struct {
			Type  string         `json:"type"`
			ID    string         `json:"id"`
			Name  string         `json:"name"`
			Text  string         `json:"text"`
			Input map[string]any `json:"input"`
		} `json:"content"`
		Usage *messageUsage `json:"usage"`
	} `json:"message"`
	// ModelUsageSinceLastResult is what this process counted since its
	// previous result, per model: unlike modelUsage and total_cost_usd it
	// never includes a resumed conversation's earlier turns.
	ModelUsageSinceLastResult map[string]modelUsage `json:"model_usage_since_last_result"`
}

// messageUsage is the Messages API's usage of one response.
type messageUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// modelUsage is one model's entry in a result's model usage.
type modelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
	// CostBasis is "list" or "managed" for a priced model, "unknown" when
	// costUSD is a guess at the default model's rate.
	CostBasis string `json:"costBasis"`
}

// Line reads one event.
func (s *stream) Line(b []byte) {
	var ev event
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	if ev.SessionID != "" && (s.sessionID == "" || ev.Type == "result" || ev.Subtype == "init") {
		s.sessionID = ev.SessionID
	}
	switch ev.Type {
	case "assistant":
		for _, c := range ev.Message.Content {
			switch c.Type {
			case "tool_use":
				if c.Name == AskUserTool {
					s.askUserID = c.ID
				}
				s.track.ToolCall(c.Name, cliexec.MainArg(c.Input))
			case "text":
				s.track.Say(c.Text)
			}
		}
		if u := ev.Message.Usage; u != nil && ev.Message.ID != "" {
			if s.messages == nil {
				s.messages = map[string]agent.Usage{}
			}
			s.messages[ev.Message.ID] = agent.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
				CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
			s.track.SetUsage(s.streamed())
		}
	case "result":
		s.result = ev.Result
		s.isError = ev.IsError
		s.errors = append(s.errors, ev.Errors...)
		if ev.ModelUsageSinceLastResult != nil {
			s.counted = s.counted.Add(resultUsage(ev.ModelUsageSinceLastResult))
			s.reported = true
			s.track.SetUsage(s.counted)
		}
	}
}

// streamed sums the usage of the responses printed so far (the main loop
// and any subagents), each counted once.
func (s *stream) streamed() agent.Usage {
	var sum agent.Usage
	for _, u := range s.messages {
		sum = sum.Add(u)
	}
	return sum
}

// usage is the visit's usage: what its results counted, or, when the CLI
// ended without one (stopped after ask_user), what its responses reported,
// without a cost.
func (s *stream) usage() agent.Usage {
	if s.reported {
		return s.counted
	}
	return s.streamed()
}

// resultUsage sums a result's per-model usage. Its cost is known when every
// model was priced from a real price table; a model Claude Code does not
// know is priced at a guess, which is not reported.
func resultUsage(models map[string]modelUsage) agent.Usage {
	sum := agent.Usage{CostKnown: true}
	// In a fixed order, so that the float sum is the same every time.
	for _, name := range slices.Sorted(maps.Keys(models)) {
		m := models[name]
		sum.InputTokens += m.InputTokens
		sum.OutputTokens += m.OutputTokens
		sum.CacheReadTokens += m.CacheReadInputTokens
		sum.CacheWriteTokens += m.CacheCreationInputTokens
		sum.CostUSD += m.CostUSD
		if m.CostBasis != "list" && m.CostBasis != "managed" {
			sum.CostKnown = false
		}
	}
	if !sum.CostKnown {
		sum.CostUSD = 0
	}
	return sum
}

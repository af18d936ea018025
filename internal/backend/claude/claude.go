// Package claude is the claude_code backend: it runs Claude Code
// non-interactively (`claude -p --output-format stream-json`) with an
// explicit state root (CLAUDE_CONFIG_DIR) and working directory, resumes and
// forks its sessions with --resume/--fork-session, serves it the ask_user
// tool over MCP, and reports the session id from the CLI's own output.
package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/askuser"
	"github.com/tether-run/tether/internal/backend/claude/facts"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/packer"
)

// Name is the backend's name in graphs and the catalogue.
const Name = facts.Name

// Options configure the executor. The zero value runs `claude` from PATH
// against the CLI's default endpoint with no key of its own.
type Options struct {
	// Options are what every CLI executor takes. BaseURL is the Messages
	// API endpoint (ANTHROPIC_BASE_URL), empty for the CLI's default;
	// APIKey reaches the CLI as ANTHROPIC_API_KEY.
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

// Executor runs Claude Code visits.
type Executor struct {
	opts Options
	cli  cliexec.CLI
}

var _ agent.Backend = (*Executor)(nil)

// New returns an executor.
func New(opts Options) *Executor {
	return &Executor{opts: opts, cli: cliexec.CLI{Options: opts.Options, Backend: Name, Bin: "claude"}}
}

// Name is the backend's name.
func (e *Executor) Name() string { return Name }

// Packer returns the claude_code session packer bound to env.
func (e *Executor) Packer(env agent.Env) agent.SessionPacker {
	return newPacker(env, packer.DefaultLimits(), e.cli.PackerOptions()...)
}

// AskUserTool is the name Claude Code gives the ask_user MCP tool.
const AskUserTool = "mcp__" + askuser.ServerName + "__" + askuser.ToolName

// PermissionModes maps a node's permission level to Claude Code's
// --permission-mode (declared with the backend's facts).
var PermissionModes = facts.PermissionModes

// visitSettings is what one visit runs with: the node's settings over the
// executor's options.
type visitSettings struct {
	model, systemPrompt, appendSystemPrompt, permissionMode string
	tools, disallowedTools                                  []string
}

func (e *Executor) settings(req agent.Request) visitSettings {
	s := req.Settings
	return visitSettings{
		model:              e.cli.ModelFor(req.Model),
		systemPrompt:       cliexec.Pick(s.SystemPrompt, e.opts.SystemPrompt),
		appendSystemPrompt: cliexec.Pick(s.AppendSystemPrompt, e.opts.AppendSystemPrompt),
		permissionMode:     cliexec.Pick(PermissionModes[s.Permissions], e.opts.PermissionMode),
		tools:              cliexec.PickList(s.Tools, e.opts.Tools),
		disallowedTools:    cliexec.PickList(s.DisallowedTools, e.opts.DisallowedTools),
	}
}

// Fingerprint hashes what defines the conversation a visit of req runs
// (see cliexec.Conversation for the fields).
func (e *Executor) Fingerprint(req agent.Request) string {
	v := e.settings(req)
	return cliexec.Fingerprint(cliexec.Conversation{
		Backend:            Name,
		Model:              v.model,
		SystemPrompt:       v.systemPrompt,
		AppendSystemPrompt: v.appendSystemPrompt,
		Tools:              v.tools,
		AllowedTools:       e.opts.AllowedTools,
		DisallowedTools:    v.disallowedTools,
		Permission:         v.permissionMode,
		MCPTools:           e.cli.MCPTools(),
	})
}

// Execute runs one visit.
func (e *Executor) Execute(ctx context.Context, req agent.Request) (agent.Result, error) {
	var res agent.Result
	visit, err := e.cli.Begin(req)
	if err != nil {
		return res, err
	}
	defer visit.Close()
	args, err := e.args(req, visit)
	if err != nil {
		return res, err
	}
	st := stream{track: cliexec.NewTracker(Name, req)}
	spec := e.cli.Spec(ctx, req, visit)
	spec.Args, spec.Env, spec.OnLine = args, e.env(req), st.line
	out, runErr := cliexec.Run(ctx, spec)
	if runErr != nil {
		if req.SessionID != "" && missingSession(out.StderrTail, st.errors) {
			return res, fmt.Errorf("%w: claude_code session %s is not in %s (for working directory %s): %s",
				agent.ErrNoSession, req.SessionID, req.Env.StateRoot, req.Env.Workdir, firstLine(out.StderrTail))
		}
		var ee *agent.ExitError
		if errors.As(runErr, &ee) {
			ee.StderrTail = tailWithResult(ee.StderrTail, st)
		}
		return res, runErr
	}
	res.SessionID = st.sessionID
	res.Fingerprint = e.Fingerprint(req)
	res.Text = st.result
	res.Usage = st.usage()
	ask, err := visit.Interaction(st.askUserID)
	if err != nil {
		return res, fmt.Errorf("claude_code: %w", err)
	}
	if ask != nil {
		res.NeedsInteraction = ask
		return res, nil
	}
	if st.isError {
		return res, &agent.ExitError{Backend: Name, Code: out.ExitCode,
			StderrTail: tailWithResult(out.StderrTail, st)}
	}
	if res.SessionID == "" {
		return res, fmt.Errorf("claude_code: the CLI reported no session id (stderr: %s)", out.StderrTail)
	}
	res.Structured = cliexec.Structured(res.Text)
	return res, nil
}

func (e *Executor) args(req agent.Request, visit *cliexec.Visit) ([]string, error) {
	v := e.settings(req)
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
	if v.systemPrompt != "" {
		a = append(a, "--system-prompt", v.systemPrompt)
	}
	if v.appendSystemPrompt != "" {
		a = append(a, "--append-system-prompt", v.appendSystemPrompt)
	}
	if v.tools != nil {
		a = append(a, "--tools", strings.Join(v.tools, ","))
	}
	if v.permissionMode != "" {
		a = append(a, "--permission-mode", v.permissionMode)
	}
	allowed := append([]string(nil), e.opts.AllowedTools...)
	if e.opts.AskUser != nil {
		cmd := askuser.Command(e.opts.AskUser, visit.Record)
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
	if len(v.disallowedTools) > 0 {
		a = append(a, "--disallowedTools", strings.Join(v.disallowedTools, ","))
	}
	return a, nil
}

// env is the CLI's environment: the base and the names the worker and the
// node pass (cliexec.Environ), plus the visit's root and endpoint.
func (e *Executor) env(req agent.Request) []string {
	env := req.Env
	set := []string{
		"CLAUDE_CONFIG_DIR=" + env.StateRoot,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
	if e.opts.APIKey != "" {
		set = append(set, "ANTHROPIC_API_KEY="+e.opts.APIKey)
	}
	if e.opts.BaseURL != "" {
		set = append(set, "ANTHROPIC_BASE_URL="+e.opts.BaseURL)
	}
	if e.settings(req).permissionMode == "bypassPermissions" && os.Geteuid() == 0 {
		set = append(set, "IS_SANDBOX=1")
	}
	return e.cli.Environ(req, set...)
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

// tailWithResult adds what the CLI reported as its error result (on stdout)
// to the stderr tail, since Claude Code puts API errors there.
func tailWithResult(stderr string, st stream) string {
	var parts []string
	if st.isError || len(st.errors) > 0 {
		parts = append(parts, st.errors...)
		if st.result != "" {
			parts = append(parts, st.result)
		}
	}
	if stderr != "" {
		parts = append(parts, stderr)
	}
	return strings.Join(parts, "\n")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
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

func (s *stream) line(b []byte) {
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

// Available reports whether the CLI is installed on this worker.
func (e *Executor) Available() error { return e.cli.Available() }

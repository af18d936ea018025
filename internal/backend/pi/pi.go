// Package pi is the pi backend: it runs `pi -p --mode json` with its
// sessions in a flat directory (--session-dir, the visit's state root),
// resumes with --session FILE and forks with --fork FILE, configures the
// model provider in a per-visit agent directory (PI_CODING_AGENT_DIR) that
// no packer ever sees, and reports the session id from the first line of
// the CLI's output.
//
// pi has no MCP client, so ask_user is a structured-output convention: a
// final reply whose last lines all start with "ASK_USER:", or a final JSON
// object with an "ask_user" key, pauses the visit with those questions.
package pi

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/pi/facts"
	"github.com/tether-run/tether/internal/excerpt"
	"github.com/tether-run/tether/internal/packer"
)

const (
	// Name is the backend's name in graphs and the catalogue.
	Name = facts.Name
	// ProviderID is the provider the executor defines in models.json.
	ProviderID = "tether"
	// APIKeyVar is the variable in the CLI's environment that models.json
	// names as the key; the key itself is never written to disk.
	APIKeyVar = "TETHER_PI_API_KEY"
	// AskUserPrefix starts each question line of the ask_user convention.
	AskUserPrefix = cliexec.AskUserPrefix
	// AskUserKey is the structured-output form of the convention.
	AskUserKey = cliexec.AskUserKey
	// BuiltinProvider is pi's provider at the facts' ModelURL, which a
	// visit without BaseURL routes through the model relay.
	BuiltinProvider = "openai"
)

// Options configure the executor.
type Options struct {
	// Options are what every CLI executor takes. BaseURL, when set,
	// defines provider ProviderID at that URL (including /v1 for
	// OpenAI-compatible servers) speaking API; when empty, Provider names
	// one of pi's built-in providers, the one at its facts' ModelURL.
	// Either is reached through the worker's model relay, which holds
	// APIKey: pi gets a placeholder as APIKeyVar, or as APIKeyEnv for a
	// built-in provider. pi has no MCP client,
	// so AskUser and AskUserGrace are not used: AskUserConvention is its
	// ask_user.
	cliexec.Options
	// API is the provider's wire API (default "openai-completions").
	API string
	// Compat is the provider's compat block in models.json, if any.
	Compat map[string]any
	// Cost is the price of the model at BaseURL, so that pi reports what a
	// visit cost; nil leaves its cost unknown.
	Cost *Cost
	// Provider is the built-in provider used when BaseURL is empty
	// (empty: pi's default, BuiltinProvider with the key of APIKeyEnv);
	// it must be the provider at the facts' ModelURL, where the relay
	// sends its calls.
	Provider string
	// APIKeyEnv is the variable a built-in Provider reads its key from
	// (default OPENAI_API_KEY): pi gets APIKey under that name.
	APIKeyEnv          string
	SystemPrompt       string
	AppendSystemPrompt string
	// Tools is the tool allowlist (--tools); nil keeps pi's default set and
	// an empty non-nil slice disables all tools. A node's tools,
	// permissions and disallowed_tools override it (see visitTools).
	Tools []string
	// AskUserConvention turns the ask_user convention on (it adds
	// cliexec.AskUserInstructions to the system prompt).
	AskUserConvention bool
}

// Cost is a model's price in USD per million tokens, as pi's models.json
// takes it.
type Cost struct {
	Input, Output, CacheRead, CacheWrite float64
}

// New returns an executor: the visit every CLI runs, with pi's options as
// its driver. pi has no MCP client: its ask_user is the reply convention.
func New(opts Options) *cliexec.Executor {
	if opts.APIKeyEnv == "" {
		opts.APIKeyEnv = "OPENAI_API_KEY"
	}
	if opts.API == "" {
		opts.API = "openai-completions"
	}
	return cliexec.New(facts.Backend, opts.Options, opts, layout, opts.AskUserConvention)
}

// Configured is the executor as the worker's configuration sets it up.
func Configured(o cliexec.Options) agent.Backend {
	return New(Options{Options: o, AskUserConvention: true})
}

func (o Options) provider(c *cliexec.CLI) string {
	if o.BaseURL != "" {
		return ProviderID
	}
	return o.Provider
}

func (o Options) appendSystemPrompt(c *cliexec.CLI, req agent.Request) string {
	return cliexec.AppendSystemPrompt(req.Settings.AppendSystemPrompt, o.AppendSystemPrompt, o.AskUserConvention && cliexec.Asks(req))
}

// DefaultTools are the tools pi enables when not told otherwise.
var DefaultTools = []string{"read", "bash", "edit", "write"}

// PermissionTools maps a node's permission level to pi's tool allowlist
// (declared with the backend's facts).
var PermissionTools = facts.PermissionTools

// visitTools is the allowlist a visit of req runs with (nil: pi's
// default): the node's tools, else the executor's; cut down to the node's
// permission level when it has one, and without the node's
// disallowed_tools.
func (o Options) visitTools(c *cliexec.CLI, req agent.Request) []string {
	s := req.Settings
	tools := cliexec.PickList(s.Tools, o.Tools)
	if allowed, ok := PermissionTools[s.Permissions]; ok {
		if s.Tools == nil {
			tools = allowed
		} else {
			tools = keep(s.Tools, func(t string) bool { return slices.Contains(allowed, t) })
		}
	}
	if len(s.DisallowedTools) > 0 {
		if tools == nil {
			tools = DefaultTools
		}
		tools = keep(tools, func(t string) bool { return !slices.Contains(s.DisallowedTools, t) })
	}
	return tools
}

// keep returns the elements of in that pass, never nil.
func keep(in []string, pass func(string) bool) []string {
	out := []string{}
	for _, t := range in {
		if pass(t) {
			out = append(out, t)
		}
	}
	return out
}

func (o Options) systemPrompt(c *cliexec.CLI, req agent.Request) string {
	return cliexec.Pick(req.Settings.SystemPrompt, o.SystemPrompt)
}

// Conversation is what defines the conversation a visit of req runs:
// provider/model, system prompt, the appended system prompt (ask_user
// convention included) and the tools.
func (o Options) Conversation(c *cliexec.CLI, req agent.Request) cliexec.Conversation {
	tools := o.visitTools(c, req)
	if tools != nil && len(tools) == 0 {
		tools = []string{"<none>"}
	}
	return cliexec.Conversation{
		Model:              o.provider(c) + "/" + c.ModelFor(req.Model),
		SystemPrompt:       o.systemPrompt(c, req),
		AppendSystemPrompt: o.appendSystemPrompt(c, req),
		Tools:              tools,
	}
}

// CheckSession finds the file of the session req resumes or forks, and
// makes it belong to the visit's working directory.
func (o Options) CheckSession(ctx context.Context, c *cliexec.CLI, req agent.Request) error {
	_, err := o.sessionFile(c, ctx, req)
	return err
}

// Launch says how visit v of req runs the CLI: the provider goes in the
// visit's own agent directory.
func (o Options) Launch(ctx context.Context, c *cliexec.CLI, req agent.Request, v *cliexec.Visit) (cliexec.Launch, error) {
	session, err := o.sessionFile(c, ctx, req)
	if err != nil {
		return cliexec.Launch{}, err
	}
	agentDir := filepath.Join(v.Dir, "agent")
	switch {
	case o.BaseURL != "":
		if err := o.writeModels(c, v); err != nil {
			return cliexec.Launch{}, err
		}
	case v.BaseURL != "":
		// The built-in provider, through the worker's model relay.
		if err := o.writeOverride(v); err != nil {
			return cliexec.Launch{}, err
		}
	default:
		if err := os.MkdirAll(agentDir, 0o700); err != nil {
			return cliexec.Launch{}, fmt.Errorf("pi: %w", err)
		}
	}
	// pi prices every call from the model's rates: its own table for a
	// built-in provider, the executor's Cost for one it defines. A model
	// defined without rates costs 0, which is not a price.
	priced := o.BaseURL == "" || o.Cost != nil
	st := &stream{track: cliexec.NewTracker(Name, req), priced: priced}
	return cliexec.Launch{Args: o.args(c, req, v.Model, session), Env: o.env(c, req, v, agentDir), Output: st}, nil
}

// sessionFile is the file of the session req resumes or forks, or "" for a
// new one. pi given a --session file that does not exist starts a new
// session silently, so absence is decided here, by the packer's path code
// (the same that answers HasSession).
func (o Options) sessionFile(c *cliexec.CLI, ctx context.Context, req agent.Request) (string, error) {
	if req.SessionID == "" {
		return "", nil
	}
	session, err := packer.New(Name, req.Env, packer.DefaultLimits(), layout).SessionFile(ctx, req.SessionID)
	if err != nil {
		return "", cliexec.NoSession(Name, req.SessionID, err)
	}
	if err := adoptWorkdir(req.Env.StateRoot, session, req.Env.Workdir); err != nil {
		return "", err
	}
	return session, nil
}

// writeOverride routes the built-in provider to the visit's endpoint,
// keeping its models and their prices.
func (o Options) writeOverride(visit *cliexec.Visit) error {
	b, err := json.MarshalIndent(map[string]any{"providers": map[string]any{
		cliexec.Pick(o.Provider, BuiltinProvider): map[string]any{"baseUrl": visit.BaseURL},
	}}, "", "  ")
	if err != nil {
		return err
	}
	if _, err := visit.WriteFile(filepath.Join("agent", "models.json"), b); err != nil {
		return fmt.Errorf("pi: %w", err)
	}
	return nil
}

func (o Options) writeModels(c *cliexec.CLI, visit *cliexec.Visit) error {
	prov := map[string]any{
		"baseUrl": cliexec.Pick(visit.BaseURL, o.BaseURL),
		"api":     o.API,
		// pi resolves a value naming an environment variable to its value.
		"apiKey": APIKeyVar,
		"models": []any{map[string]any{"id": visit.Model}},
	}
	if o.Compat != nil {
		prov["compat"] = o.Compat
	}
	if c := o.Cost; c != nil {
		model := prov["models"].([]any)[0].(map[string]any)
		model["cost"] = map[string]float64{"input": c.Input, "output": c.Output, "cacheRead": c.CacheRead, "cacheWrite": c.CacheWrite}
	}
	b, err := json.MarshalIndent(map[string]any{"providers": map[string]any{ProviderID: prov}}, "", "  ")
	if err != nil {
		return err
	}
	if _, err := visit.WriteFile(filepath.Join("agent", "models.json"), b); err != nil {
		return fmt.Errorf("pi: %w", err)
	}
	return nil
}

func (o Options) args(c *cliexec.CLI, req agent.Request, model, session string) []string {
	a := []string{"-p", "--mode", "json", "--session-dir", req.Env.StateRoot}
	switch {
	case session != "" && req.Fork:
		a = append(a, "--fork", session)
	case session != "":
		a = append(a, "--session", session)
	}
	if p := o.provider(c); p != "" {
		a = append(a, "--provider", p)
	}
	if model != "" {
		a = append(a, "--model", model)
	}
	if s := o.systemPrompt(c, req); s != "" {
		a = append(a, "--system-prompt", s)
	}
	if s := o.appendSystemPrompt(c, req); s != "" {
		a = append(a, "--append-system-prompt", s)
	}
	switch tools := o.visitTools(c, req); {
	case tools == nil:
	case len(tools) == 0:
		a = append(a, "--no-tools")
	default:
		a = append(a, "--tools", strings.Join(tools, ","))
	}
	// The prompt comes on stdin: pi would read an argument starting with
	// "@" as a file to include, and one starting with "-" as a flag.
	return a
}

// env is the visit's agent directory and key (the model relay's
// placeholder).
func (o Options) env(c *cliexec.CLI, req agent.Request, visit *cliexec.Visit, agentDir string) []string {
	set := []string{"PI_CODING_AGENT_DIR=" + agentDir, "PI_OFFLINE=1"}
	if o.BaseURL != "" {
		set = append(set, APIKeyVar+"="+visit.APIKey)
	} else if key := visit.APIKey; key != "" {
		// A built-in provider reads its own variable.
		set = append(set, o.APIKeyEnv+"="+key)
	}
	return set
}

// stream follows `pi --mode json` events.
type stream struct {
	sessionID    string
	text         string
	stopReason   string
	errorMessage string

	track  *cliexec.Tracker
	priced bool
	// live is the tail of the text block being streamed.
	live string
	// usage sums the usage of the visit's assistant messages.
	usage agent.Usage
}

type event struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Message struct {
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason   string        `json:"stopReason"`
		ErrorMessage string        `json:"errorMessage"`
		Usage        *messageUsage `json:"usage"`
	} `json:"message"`
	// AssistantMessageEvent is the streamed change of a message_update.
	AssistantMessageEvent struct {
		Type  string `json:"type"`
		Delta string `json:"delta"`
	} `json:"assistantMessageEvent"`
	// ToolName and Args describe a tool_execution_start.
	ToolName string         `json:"toolName"`
	Args     map[string]any `json:"args"`
}

// messageUsage is pi's usage of one assistant message: input excludes the
// cache reads and writes, and cost is priced from the model's rates.
type messageUsage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
	Cost       struct {
		Total float64 `json:"total"`
	} `json:"cost"`
}

// Report is what the events said about the visit. pi exits 0 when the
// model call failed; the failure is in its output.
func (s *stream) Report() cliexec.Report {
	r := cliexec.Report{SessionID: s.sessionID, Text: s.text, Usage: s.usage, Failure: s.errorMessage}
	r.Usage.CostKnown = s.priced
	if !s.priced {
		r.Usage.CostUSD = 0
	}
	if s.stopReason == "error" || s.stopReason == "aborted" {
		r.Failed, r.Failure = true, "model call failed ("+s.stopReason+"): "+s.errorMessage
	}
	return r
}

// Line reads one event.
func (s *stream) Line(b []byte) {
	var ev event
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	switch ev.Type {
	case "session":
		if s.sessionID == "" {
			s.sessionID = ev.ID
		}
	case "message_update":
		switch ev.AssistantMessageEvent.Type {
		case "text_start":
			s.live = ""
		case "text_delta":
			s.live = excerpt.Tail(s.live+ev.AssistantMessageEvent.Delta, agent.MaxProgressText)
			s.track.Say(s.live)
		}
	case "tool_execution_start":
		s.track.ToolCall(toolTitle(ev.ToolName), cliexec.MainArg(ev.Args))
	case "message_end":
		if ev.Message.Role != "assistant" {
			return
		}
		var parts []string
		for _, c := range ev.Message.Content {
			if c.Type == "text" {
				parts = append(parts, c.Text)
			}
		}
		s.text = strings.Join(parts, "")
		s.track.Say(s.text)
		s.stopReason, s.errorMessage = ev.Message.StopReason, ev.Message.ErrorMessage
		if u := ev.Message.Usage; u != nil {
			s.usage.InputTokens += u.Input
			s.usage.OutputTokens += u.Output
			s.usage.CacheReadTokens += u.CacheRead
			s.usage.CacheWriteTokens += u.CacheWrite
			s.usage.CostUSD += u.Cost.Total
			s.track.SetUsage(s.usage)
		}
	}
}

// toolTitle capitalises pi's tool names ("edit" → "Edit"), as the other
// CLIs spell theirs.
func toolTitle(name string) string {
	if name == "" {
		return name
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// Package gemini is the gemini backend: it runs Gemini CLI headless
// (`gemini -p "" --output-format stream-json`, the prompt on stdin) with
// its whole home (GEMINI_CLI_HOME) at the visit's state root, resumes a
// session with --resume ID, forks one by copying its file under a new id,
// and reports the session id and the visit's usage from the CLI's own
// stream.
//
// ask_user is a structured-output convention, as for pi: Gemini CLI drops
// every tool named ask_user from a headless run, the MCP server's
// included (it matches the name without the mcp_<server>_ prefix), so the
// model cannot call Tether's. A final reply whose last lines all start
// with "ASK_USER:", or a final JSON object with an "ask_user" key, pauses
// the visit with those questions.
//
// Gemini CLI keys a session's directory by a project slug it picks for the
// working directory in a registry of its own; the executor pins every
// working directory to one slug (ProjectSlug) before each visit, so a
// session restored on another machine, for another working directory, is
// where the CLI looks for it.
package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/gemini/facts"
	"github.com/tether-run/tether/internal/packer"
)

// Name is the backend's name in graphs and the catalogue.
const Name = facts.Name

const (
	// AskUserPrefix starts each question line of the ask_user convention.
	AskUserPrefix = cliexec.AskUserPrefix
	// AskUserKey is the structured-output form of the convention.
	AskUserKey = cliexec.AskUserKey
)

// Options configure the executor. The zero value runs `gemini` from PATH
// against the Gemini API with no key of its own.
type Options struct {
	// Options are what every CLI executor takes. BaseURL is the Gemini API
	// endpoint (GOOGLE_GEMINI_BASE_URL, without /v1beta), empty for the
	// CLI's default; APIKey reaches the CLI as GEMINI_API_KEY. AskUser and
	// AskUserGrace are not used (see the package comment):
	// AskUserConvention is its ask_user.
	cliexec.Options
	// ApprovalMode is --approval-mode (default, auto_edit, yolo, plan);
	// empty keeps the CLI's default. A node's permissions override it
	// (see ApprovalModes).
	ApprovalMode string
	// SystemPrompt replaces Gemini CLI's system prompt (GEMINI_SYSTEM_MD);
	// AppendSystemPrompt is added to it as the user's memory file,
	// <root>/.gemini/GEMINI.md, which Gemini CLI puts in its system
	// instruction.
	SystemPrompt       string
	AppendSystemPrompt string
	// AskUserConvention turns the ask_user convention on (it adds
	// cliexec.AskUserInstructions to the system prompt).
	AskUserConvention bool
	// Tools limits the built-in tools (settings tools.core); nil keeps the
	// CLI's set.
	Tools []string
}

// noMCPServer is the only MCP server a visit may start: none has its name.
const noMCPServer = "tether-no-mcp-server"

// ApprovalModes maps a node's permission level to Gemini CLI's
// --approval-mode (see facts.ApprovalModes).
var ApprovalModes = facts.ApprovalModes

// New returns an executor: the visit every CLI runs, with Gemini CLI's
// options as its driver. Gemini CLI cannot call Tether's ask_user tool:
// its ask_user is the reply convention.
func New(opts Options) *cliexec.Executor {
	return cliexec.New(facts.Backend, opts.Options, opts, layout, opts.AskUserConvention)
}

// Configured is the executor as the worker's configuration sets it up.
func Configured(o cliexec.Options) agent.Backend {
	return New(Options{Options: o, AskUserConvention: true})
}

// visitSettings is what one visit runs with: the node's settings over the
// executor's options.
type visitSettings struct {
	cliexec.Merged
	approvalMode string
}

func (o Options) settings(c *cliexec.CLI, req agent.Request) visitSettings {
	return visitSettings{Merged: c.Merge(req, cliexec.Defaults{SystemPrompt: o.SystemPrompt, AppendSystemPrompt: o.AppendSystemPrompt, Tools: o.Tools, Convention: o.AskUserConvention}), approvalMode: cliexec.Pick(ApprovalModes[req.Settings.Permissions], o.ApprovalMode)}
}

// Conversation is what defines the conversation a visit of req runs.
func (o Options) Conversation(c *cliexec.CLI, req agent.Request) cliexec.Conversation {
	v := o.settings(c, req)
	conv := v.Conversation(v.approvalMode)
	return conv
}

// CheckSession finds the file of the session req resumes or forks.
func (o Options) CheckSession(ctx context.Context, c *cliexec.CLI, req agent.Request) error {
	_, err := o.sessionFile(c, ctx, req)
	return err
}

// Launch says how visit v of req runs the CLI: the project pinned, a fork
// copied, the visit's settings written.
func (o Options) Launch(ctx context.Context, c *cliexec.CLI, req agent.Request, visit *cliexec.Visit) (cliexec.Launch, error) {
	session, err := o.sessionFile(c, ctx, req)
	if err != nil {
		return cliexec.Launch{}, err
	}
	if err := pinProject(req.Env); err != nil {
		return cliexec.Launch{}, err
	}
	resume := req.SessionID
	if req.Fork && session != "" {
		if resume, err = fork(req.Env.StateRoot, session); err != nil {
			return cliexec.Launch{}, err
		}
	}
	v := o.settings(c, req)
	if err := o.writeSettings(c, req, v); err != nil {
		return cliexec.Launch{}, err
	}
	set, err := o.env(c, req, visit, v)
	if err != nil {
		return cliexec.Launch{}, err
	}
	return cliexec.Launch{Args: o.args(c, v, visit, resume), Env: set, Output: &stream{track: cliexec.NewTracker(Name, req)},
		Gone: func(stderr string) bool { return strings.Contains(stderr, "Invalid session identifier") }}, nil
}

// sessionFile is the file of the session req resumes or forks, or "" for a
// new one, found by the packer's own path code (what HasSession finds)
// and checked to hold that very id.
func (o Options) sessionFile(c *cliexec.CLI, ctx context.Context, req agent.Request) (string, error) {
	if req.SessionID == "" {
		return "", nil
	}
	p, err := packer.New(Name, req.Env, packer.DefaultLimits(), layout).SessionFile(ctx, req.SessionID)
	if err != nil {
		return "", cliexec.NoSession(Name, req.SessionID, err)
	}
	id, err := sessionIDOf(req.Env.StateRoot, p)
	if err != nil {
		return "", fmt.Errorf("gemini: read session %s: %w", req.SessionID, err)
	}
	if id != req.SessionID {
		return "", fmt.Errorf("%w: gemini session file %s holds session %s, not %s", agent.ErrNoSession, p, id, req.SessionID)
	}
	return p, nil
}

func (o Options) args(c *cliexec.CLI, v visitSettings, visit *cliexec.Visit, resume string) []string {
	// The prompt comes on stdin; -p "" makes the run headless and adds
	// nothing to it.
	a := []string{"-p", "", "--output-format", "stream-json", "--skip-trust"}
	if visit.Model != "" {
		a = append(a, "--model", visit.Model)
	}
	if resume != "" {
		a = append(a, "--resume", resume)
	}
	if v.approvalMode != "" {
		a = append(a, "--approval-mode", v.approvalMode)
	}
	// No MCP server of the working directory's .gemini/settings.json is
	// started: only one of a name no configuration uses may (the CLI
	// refuses an empty list).
	return append(a, "--allowed-mcp-server-names", noMCPServer)
}

// env is the CLI's environment: the base and the names the worker and the
// node pass (cliexec.Environ), plus the visit's home, endpoint and key.
func (o Options) env(c *cliexec.CLI, req agent.Request, visit *cliexec.Visit, v visitSettings) ([]string, error) {
	set := []string{
		"GEMINI_CLI_HOME=" + req.Env.StateRoot,
		// The CLI would start itself a second time to raise node's heap
		// limit, which doubles its start-up.
		"GEMINI_CLI_NO_RELAUNCH=true",
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		"NO_COLOR=1",
	}
	if visit.APIKey != "" {
		set = append(set, "GEMINI_API_KEY="+visit.APIKey)
	}
	if visit.BaseURL != "" {
		set = append(set, "GOOGLE_GEMINI_BASE_URL="+visit.BaseURL)
	}
	if v.SystemPrompt != "" {
		p, err := visit.WriteFile("system.md", []byte(v.SystemPrompt))
		if err != nil {
			return nil, fmt.Errorf("gemini: %w", err)
		}
		set = append(set, "GEMINI_SYSTEM_MD="+p)
	}
	return set, nil
}

// writeSettings writes the visit's user settings, <root>/.gemini/settings.json:
// API-key auth (the key itself stays in the environment), no telemetry,
// usage statistics or update checks, and the tool limits; and the
// appended system prompt as the user's memory file, GEMINI.md. Gemini CLI reads a system settings file only from a directory
// no other user can write, which a scratch directory under /tmp is not,
// so the settings live in the state root, where the packer never takes
// them (settings*.json is on its deny list) and the next visit rewrites
// them.
func (o Options) writeSettings(c *cliexec.CLI, req agent.Request, v visitSettings) error {
	s := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
	}
	tools := map[string]any{}
	if v.Tools != nil {
		tools["core"] = v.Tools
	}
	if len(v.DisallowedTools) > 0 {
		tools["exclude"] = v.DisallowedTools
	}
	if len(tools) > 0 {
		s["tools"] = tools
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeState(req.Env.StateRoot, ".gemini/settings.json", b); err != nil {
		return err
	}
	memory := filepath.Join(req.Env.StateRoot, ".gemini", "GEMINI.md")
	if v.AppendSystemPrompt == "" {
		if err := os.Remove(memory); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("gemini: %w", err)
		}
		return nil
	}
	return writeState(req.Env.StateRoot, ".gemini/GEMINI.md", []byte(v.AppendSystemPrompt+"\n"))
}

// stream follows `gemini --output-format stream-json` events.
type stream struct {
	sessionID string
	// text is the assistant's text since the last tool call.
	text   string
	status string
	errors []string
	usage  agent.Usage

	track *cliexec.Tracker
}

type event struct {
	Type      string         `json:"type"`
	SessionID string         `json:"session_id"`
	Role      string         `json:"role"`
	Content   string         `json:"content"`
	Delta     bool           `json:"delta"`
	ToolName  string         `json:"tool_name"`
	ToolID    string         `json:"tool_id"`
	Params    map[string]any `json:"parameters"`
	Status    string         `json:"status"`
	Message   string         `json:"message"`
	Severity  string         `json:"severity"`
	Error     *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
		Cached       int64 `json:"cached"`
	} `json:"stats"`
}

// toolTitles name Gemini CLI's tools as the other CLIs' progress does.
var toolTitles = map[string]string{
	"write_file": "Write", "replace": "Edit", "read_file": "Read",
	"run_shell_command": "Bash", "list_directory": "LS", "grep_search": "Grep", "glob": "Glob",
}

// Report is what the events said about the visit: it failed unless its
// result said success and no error came before.
func (s *stream) Report() cliexec.Report {
	r := cliexec.Report{SessionID: s.sessionID, Text: s.text, Usage: s.usage, Failure: strings.Join(s.errors, "\n"),
		Failed: s.status != "success" || len(s.errors) > 0}
	if s.status == "" {
		r.Failure = strings.TrimSpace("the CLI reported no result\n" + r.Failure)
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
	case "init":
		if s.sessionID == "" {
			s.sessionID = ev.SessionID
		}
	case "message":
		if ev.Role != "assistant" {
			return
		}
		if ev.Delta {
			s.text += ev.Content
		} else {
			s.text = ev.Content
		}
		s.track.Say(s.text)
	case "tool_use":
		s.text = ""
		title := toolTitles[ev.ToolName]
		if title == "" {
			title = ev.ToolName
		}
		s.track.ToolCall(title, cliexec.MainArg(ev.Params))
	case "error":
		if ev.Severity != "warning" && ev.Message != "" {
			s.errors = append(s.errors, ev.Message)
		}
	case "result":
		s.status = ev.Status
		if ev.Error != nil && ev.Error.Message != "" {
			s.errors = append(s.errors, ev.Error.Message)
		}
		if st := ev.Stats; st != nil {
			// input_tokens counts the cached ones too.
			s.usage = agent.Usage{InputTokens: st.InputTokens - st.Cached, OutputTokens: st.OutputTokens, CacheReadTokens: st.Cached}
			s.track.SetUsage(s.usage)
		}
	}
}

// Package codex is the codex backend: it runs `codex exec --json` with an
// explicit state root (CODEX_HOME) and working directory, resumes and forks
// sessions with `codex exec resume|fork ID`, points the CLI at its model
// through a model_providers entry given on the command line (nothing is
// written to config.toml), serves it the ask_user tool over MCP, and
// reports the session (thread) id from the CLI's own output.
package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/askuser"
	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/packer"
)

// ProviderID is the model_providers entry the executor defines, and
// APIKeyVar the variable in the CLI's environment that holds its key.
const (
	ProviderID = "tether"
	APIKeyVar  = "TETHER_CODEX_API_KEY"
	// DefaultBaseURL is the Responses API endpoint used when BaseURL is empty.
	DefaultBaseURL = "https://api.openai.com/v1"
)

// Options configure the executor.
type Options struct {
	// BinDir holds the `codex` program; empty means PATH.
	BinDir string
	// BaseURL is the Responses API base, including /v1 (default
	// DefaultBaseURL).
	BaseURL string
	// APIKey is the key itself; when empty it is read from the worker's
	// environment variable APIKeyEnv (default OPENAI_API_KEY). It reaches the
	// CLI only as APIKeyVar in its environment.
	APIKey    string
	APIKeyEnv string
	// Model is the default model (-m); Request.Model overrides it.
	Model string
	// DeveloperInstructions are given to new sessions as developer
	// instructions (Codex's system-prompt addition).
	DeveloperInstructions string
	// Sandbox is -s (read-only, workspace-write, danger-full-access); empty
	// keeps the CLI's default. Bypass passes
	// --dangerously-bypass-approvals-and-sandbox instead.
	Sandbox string
	Bypass  bool
	// AskUser is the argv that starts the ask_user MCP server, without
	// --record. Nil leaves the tool out.
	AskUser      []string
	AskUserGrace time.Duration
	// Timeout bounds one visit; zero means only the context bounds it.
	Timeout        time.Duration
	Heartbeat      func(ctx context.Context, details any)
	HeartbeatEvery time.Duration
	// Env is added to the CLI's environment.
	Env     []string
	TempDir string
}

// Executor runs Codex visits.
type Executor struct {
	opts Options
	cli  cliexec.CLI
}

var _ backend.Backend = (*Executor)(nil)

// New returns an executor.
func New(opts Options) *Executor {
	if opts.APIKeyEnv == "" {
		opts.APIKeyEnv = "OPENAI_API_KEY"
	}
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	return &Executor{opts: opts, cli: cliexec.CLI{
		Backend: backend.Codex, Bin: "codex", BinDir: opts.BinDir, Model: opts.Model, TempDir: opts.TempDir,
		Timeout: opts.Timeout, Heartbeat: opts.Heartbeat, HeartbeatEvery: opts.HeartbeatEvery,
		AskUserMCP: opts.AskUser != nil, AskUserGrace: opts.AskUserGrace,
	}}
}

// Name is backend.Codex.
func (e *Executor) Name() string { return backend.Codex }

// Packer returns the codex session packer bound to env.
func (e *Executor) Packer(env backend.Env) backend.SessionPacker { return NewPacker(env) }

// NewPacker builds the packer for a live env (packer.NewCodex with the
// default limits); a worker may replace it to change the limits.
var NewPacker = func(env backend.Env) backend.SessionPacker { return newPacker(env) }

// Fingerprint hashes what defines a conversation with model (empty: the
// executor's default): backend, model, developer instructions, the
// sandbox/approval setting as the permission, and the MCP tools.
func (e *Executor) Fingerprint(model string) string {
	perm := "sandbox:" + e.opts.Sandbox
	if e.opts.Bypass {
		perm = "bypass"
	}
	return cliexec.Fingerprint(cliexec.Conversation{Backend: backend.Codex, Model: e.cli.ModelFor(model),
		SystemPrompt: e.opts.DeveloperInstructions, Permission: perm, MCPTools: e.cli.MCPTools()})
}

// Execute runs one visit.
func (e *Executor) Execute(ctx context.Context, req backend.Request) (backend.Result, error) {
	var res backend.Result
	visit, err := e.cli.Begin(req)
	if err != nil {
		return res, err
	}
	defer visit.Close()
	var st stream
	spec := e.cli.Spec(ctx, req, visit)
	spec.Args, spec.Env, spec.OnLine = e.args(req, visit), e.env(req.Env), st.line
	out, runErr := cliexec.Run(ctx, spec)
	if runErr != nil {
		if req.SessionID != "" && strings.Contains(out.StderrTail, "no rollout found") {
			return res, fmt.Errorf("%w: codex session %s has no rollout under %s: %s",
				backend.ErrNoSession, req.SessionID, filepath.Join(req.Env.StateRoot, "sessions"), errorLine(out.StderrTail))
		}
		return res, cliexec.ReportFailure(runErr, st.failure)
	}
	res.SessionID = st.threadID
	res.Fingerprint = e.Fingerprint(req.Model)
	res.Text = st.text
	pending := ""
	if st.askUser && res.SessionID != "" {
		pending = pendingCallID(ctx, req.Env, res.SessionID)
	}
	ask, err := visit.Interaction(pending)
	if err != nil {
		return res, fmt.Errorf("codex: %w", err)
	}
	if ask != nil {
		res.NeedsInteraction = ask
		return res, nil
	}
	if st.failure != "" && !st.completed {
		return res, &backend.ExitError{Backend: backend.Codex, Code: out.ExitCode, StderrTail: st.failure + "\n" + out.StderrTail}
	}
	if res.SessionID == "" {
		return res, fmt.Errorf("codex: the CLI reported no thread id (stderr: %s)", out.StderrTail)
	}
	res.Structured = cliexec.Structured(res.Text)
	return res, nil
}

func (e *Executor) args(req backend.Request, visit *cliexec.Visit) []string {
	a := []string{"exec", "--json", "--skip-git-repo-check", "-C", req.Env.Workdir,
		"--disable", "plugins",
		"-c", "analytics.enabled=false",
		"-c", "check_for_update_on_startup=false",
		"-c", "model_provider=" + tomlString(ProviderID),
		"-c", "model_providers." + ProviderID + "={name=" + tomlString(ProviderID) +
			",base_url=" + tomlString(e.opts.BaseURL) + `,wire_api="responses",env_key=` + tomlString(APIKeyVar) + "}",
	}
	if visit.Model != "" {
		a = append(a, "-m", visit.Model)
	}
	if e.opts.Bypass {
		a = append(a, "--dangerously-bypass-approvals-and-sandbox")
	} else if e.opts.Sandbox != "" {
		a = append(a, "-s", e.opts.Sandbox)
	}
	if e.opts.DeveloperInstructions != "" {
		a = append(a, "-c", "developer_instructions="+tomlString(e.opts.DeveloperInstructions))
	}
	if e.opts.AskUser != nil {
		cmd := askuser.Command(e.opts.AskUser, visit.Record)
		var args []string
		for _, s := range cmd[1:] {
			args = append(args, tomlString(s))
		}
		a = append(a, "-c", "mcp_servers."+askuser.ServerName+"={command="+tomlString(cmd[0])+
			",args=["+strings.Join(args, ",")+`],default_tools_approval_mode="approve"}`)
	}
	switch {
	case req.SessionID != "" && req.Fork:
		a = append(a, "fork", req.SessionID)
	case req.SessionID != "":
		a = append(a, "resume", req.SessionID)
	}
	// The prompt comes on stdin, so that no prompt text is ever parsed as a
	// flag.
	return append(a, "-")
}

func (e *Executor) env(env backend.Env) []string {
	set := []string{"CODEX_HOME=" + env.StateRoot, APIKeyVar + "=" + cliexec.APIKey(e.opts.APIKey, e.opts.APIKeyEnv)}
	set = append(set, e.opts.Env...)
	return cliexec.Environ([]string{"CODEX_*", "OPENAI_*", APIKeyVar}, set...)
}

// tomlString quotes s as a TOML basic string (JSON's escapes are a subset
// TOML accepts, as long as HTML escaping stays off).
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSpace(b.String())
}

func errorLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "Error:") {
			return l
		}
	}
	return stderr
}

// stream follows `codex exec --json` events.
type stream struct {
	threadID  string
	text      string
	failure   string
	completed bool
	askUser   bool
}

type event struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Item struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Server string `json:"server"`
		Tool   string `json:"tool"`
	} `json:"item"`
}

func (s *stream) line(b []byte) {
	var ev event
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	switch ev.Type {
	case "thread.started":
		s.threadID = ev.ThreadID
	case "item.completed":
		switch ev.Item.Type {
		case "agent_message":
			s.text = ev.Item.Text
		case "mcp_tool_call":
			if ev.Item.Server == askuser.ServerName && ev.Item.Tool == askuser.ToolName {
				s.askUser = true
			}
		}
	case "turn.completed":
		s.completed = true
	case "turn.failed":
		if ev.Error != nil {
			s.failure = ev.Error.Message
		}
	case "error":
		s.failure = ev.Message
	}
}

// pendingCallID finds the call_id of the session's last ask_user call in its
// rollout: Codex passes no tool-use id to MCP servers and its --json items
// carry their own ids, so the rollout is the one place that has it.
func pendingCallID(ctx context.Context, env backend.Env, sessionID string) string {
	// The packer's path code finds the rollout, as it does for HasSession.
	path, err := packer.NewCodex(env, packer.DefaultLimits()).SessionFile(ctx, sessionID)
	if err != nil {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var id string
	r := bufio.NewReaderSize(f, 64*1024)
	for {
		line, err := r.ReadBytes('\n')
		if bytes.Contains(line, []byte(`"function_call"`)) && bytes.Contains(line, []byte(askuser.ToolName)) {
			var rec struct {
				Payload struct {
					Type      string `json:"type"`
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
					CallID    string `json:"call_id"`
				} `json:"payload"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Payload.Type == "function_call" &&
				(rec.Payload.Name == askuser.ToolName && rec.Payload.Namespace == AskUserNamespace ||
					rec.Payload.Name == AskUserNamespace+"__"+askuser.ToolName) {
				id = rec.Payload.CallID
			}
		}
		if err != nil {
			return id
		}
	}
}

// AskUserNamespace is the tool namespace Codex puts the ask_user MCP tool in
// (the model calls ask_user inside namespace mcp__tether).
const AskUserNamespace = "mcp__" + askuser.ServerName

func newPacker(env backend.Env) backend.SessionPacker {
	return packer.NewCodex(env, packer.DefaultLimits())
}

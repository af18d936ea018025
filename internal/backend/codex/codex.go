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
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/askuser"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/codex/facts"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/untrusted"
)

// Name is the backend's name in graphs and the catalogue.
const Name = facts.Name

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
	// Options are what every CLI executor takes. BaseURL is the Responses
	// API base, including /v1 (default DefaultBaseURL); APIKey reaches the
	// CLI only as APIKeyVar in its environment.
	cliexec.Options
	// BaseInstructions replace Codex's own instructions (its system
	// prompt, through the model_instructions_file setting);
	// DeveloperInstructions are added as developer instructions. A node's
	// system_prompt and append_system_prompt override them.
	BaseInstructions      string
	DeveloperInstructions string
	// Sandbox is -s (read-only, workspace-write, danger-full-access); empty
	// keeps the CLI's default. Bypass passes
	// --dangerously-bypass-approvals-and-sandbox instead. A node's
	// permissions override both (see Sandboxes).
	Sandbox string
	Bypass  bool
}

// confinedReadOnly reports whether a visit of req, run in the worker's
// sandbox, must not write its working directory: its sandbox level is
// read-only, or none is set and Codex's own default (read-only) applies.
// Network access, which Codex's sandbox also removes, stays (see
// docs/security.md).
func (o Options) confinedReadOnly(c *cliexec.CLI, req agent.Request) bool {
	if c.Sandbox == nil {
		return false
	}
	v := o.settings(c, req)
	return v.sandbox == "" || v.sandbox == "read-only"
}

// New returns an executor: the visit every CLI runs, with Codex's options
// as its driver.
func New(opts Options) *cliexec.Executor {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	return cliexec.New(facts.Backend, opts.Options, opts, layout, false)
}

// Configured is the executor as the worker's configuration sets it up.
func Configured(o cliexec.Options) agent.Backend {
	return New(Options{Options: o, Sandbox: o.Vars[facts.SandboxVar]})
}

// Bypass is the permission a node's full level maps to: no sandbox and
// no approvals (--dangerously-bypass-approvals-and-sandbox).
const Bypass = facts.Bypass

// Sandboxes maps a node's permission level to Codex's sandbox (declared
// with the backend's facts).
var Sandboxes = facts.Sandboxes

// visitSettings is what one visit runs with: the node's settings over the
// executor's options.
type visitSettings struct {
	model, baseInstructions, developerInstructions string
	// sandbox is a -s value, Bypass, or "" for the CLI's default.
	sandbox string
}

func (o Options) settings(c *cliexec.CLI, req agent.Request) visitSettings {
	s := req.Settings
	def := o.Sandbox
	if o.Bypass {
		def = Bypass
	}
	return visitSettings{
		model:                 c.ModelFor(req.Model),
		baseInstructions:      cliexec.Pick(s.SystemPrompt, o.BaseInstructions),
		developerInstructions: cliexec.Pick(s.AppendSystemPrompt, o.DeveloperInstructions),
		sandbox:               cliexec.Pick(Sandboxes[s.Permissions], def),
	}
}

// Conversation is what defines the conversation a visit of req runs:
// model, base and developer instructions, the sandbox as the permission,
// and the MCP tools.
func (o Options) Conversation(c *cliexec.CLI, req agent.Request) cliexec.Conversation {
	v := o.settings(c, req)
	perm := "sandbox:" + v.sandbox
	if v.sandbox == Bypass {
		perm = Bypass
	}
	return cliexec.Conversation{Model: v.model,
		SystemPrompt: v.baseInstructions, AppendSystemPrompt: v.developerInstructions,
		Permission: perm, MCPTools: c.MCPTools(req)}
}

// Launch says how visit v of req runs the CLI.
func (o Options) Launch(ctx context.Context, c *cliexec.CLI, req agent.Request, v *cliexec.Visit) (cliexec.Launch, error) {
	st := &stream{track: cliexec.NewTracker(Name, req), ctx: ctx, env: req.Env}
	if req.SessionID != "" {
		// The CLI reports the thread's running total, which a resumed or
		// forked thread carries on from this one's last count.
		path, err := rolloutPath(ctx, req.Env, req.SessionID)
		if err != nil {
			return cliexec.Launch{}, err
		}
		base := rollout{root: req.Env.StateRoot, path: path}
		if _, err := base.read(); err != nil {
			return cliexec.Launch{}, err
		}
		st.base = base.usage()
		// A resumed thread goes on writing the same rollout: following it
		// starts where this read ended, not at its first line.
		st.resumed, st.resumedID = base, req.SessionID
	}
	args, err := o.args(c, req, v)
	if err != nil {
		return cliexec.Launch{}, err
	}
	return cliexec.Launch{Args: args, Env: o.env(c, req, v), Output: st, ReadOnlyDir: o.confinedReadOnly(c, req),
		Gone: func(stderr string) bool { return strings.Contains(stderr, "no rollout found") }}, nil
}

func (o Options) args(c *cliexec.CLI, req agent.Request, visit *cliexec.Visit) ([]string, error) {
	v := o.settings(c, req)
	a := []string{"exec", "--json", "--skip-git-repo-check", "-C", req.Env.Workdir,
		"--disable", "plugins",
		"-c", "analytics.enabled=false",
		"-c", "check_for_update_on_startup=false",
		"-c", "model_provider=" + tomlString(ProviderID),
		"-c", "model_providers." + ProviderID + "={name=" + tomlString(ProviderID) +
			",base_url=" + tomlString(cliexec.Pick(visit.BaseURL, o.BaseURL)) + `,wire_api="responses",env_key=` + tomlString(APIKeyVar) + "}",
	}
	if visit.Model != "" {
		a = append(a, "-m", visit.Model)
	}
	switch {
	case v.sandbox == Bypass || c.Sandbox != nil:
		// Inside the worker's sandbox Codex's own cannot run (bubblewrap
		// must change mounts, which a Landlock domain forbids); the
		// worker's box bounds what Codex reaches instead, and keeps its
		// working directory read-only for a read-only level (see
		// confinedReadOnly).
		a = append(a, "--dangerously-bypass-approvals-and-sandbox")
	case v.sandbox != "":
		a = append(a, "-s", v.sandbox)
	}
	if v.baseInstructions != "" {
		// Codex reads replacement instructions only from a file.
		p, err := visit.WriteFile("instructions.md", []byte(v.baseInstructions))
		if err != nil {
			return nil, fmt.Errorf("codex: %w", err)
		}
		a = append(a, "-c", "model_instructions_file="+tomlString(p))
	}
	if v.developerInstructions != "" {
		a = append(a, "-c", "developer_instructions="+tomlString(v.developerInstructions))
	}
	if ask := c.AskUserFor(req); ask != nil {
		cmd := askuser.Command(ask, visit.Record)
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
	return append(a, "-"), nil
}

// env is the visit's root and key (the model relay's placeholder).
func (o Options) env(c *cliexec.CLI, req agent.Request, visit *cliexec.Visit) []string {
	return []string{"CODEX_HOME=" + req.Env.StateRoot, APIKeyVar + "=" + visit.APIKey}
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

// stream follows `codex exec --json` events.
type stream struct {
	threadID  string
	text      string
	failure   string
	completed bool
	askUser   bool

	track *cliexec.Tracker
	ctx   context.Context
	env   agent.Env
	// base is the thread's total before the visit; total the latest one,
	// from turn.completed or else from the rollout the CLI writes.
	base    agent.Usage
	total   *tokenUsage
	rollout rollout
	// resumed is the rollout of the thread the visit resumed (resumedID),
	// as read for base.
	resumed   rollout
	resumedID string
	// err is what made the rollout unreadable (agent.ErrUnsafeFile): it
	// fails the visit.
	err error
}

type event struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Item struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Server  string `json:"server"`
		Tool    string `json:"tool"`
		Command string `json:"command"`
		Query   string `json:"query"`
		Changes []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	} `json:"item"`
	Usage *tokenUsage `json:"usage"`
}

// tokenUsage is Codex's token count: input_tokens counts every input token,
// the cached ones and those written to the cache included.
type tokenUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
}

func (u tokenUsage) usage() agent.Usage {
	return agent.Usage{
		InputTokens:      max(u.InputTokens-u.CachedInputTokens-u.CacheWriteInputTokens, 0),
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.CachedInputTokens,
		CacheWriteTokens: u.CacheWriteInputTokens,
	}
}

// Line reads one event.
func (s *stream) Line(b []byte) {
	var ev event
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	switch ev.Type {
	case "thread.started":
		s.threadID = ev.ThreadID
	case "item.started":
		s.started(ev)
	case "item.completed":
		switch ev.Item.Type {
		case "agent_message":
			s.text = ev.Item.Text
			s.track.Say(ev.Item.Text)
		case "mcp_tool_call":
			if ev.Item.Server == askuser.ServerName && ev.Item.Tool == askuser.ToolName {
				s.askUser = true
			}
		}
	case "turn.completed":
		s.completed = true
		if ev.Usage != nil {
			s.total = ev.Usage
			s.track.SetUsage(s.total.usage().Sub(s.base))
		}
	case "turn.failed":
		if ev.Error != nil {
			s.failure = ev.Error.Message
		}
	case "error":
		s.failure = ev.Message
	}
	s.follow()
}

// started records the tool call an item stands for.
func (s *stream) started(ev event) {
	it := ev.Item
	switch it.Type {
	case "command_execution":
		s.track.ToolCall("Bash", shellCommand(it.Command))
	case "file_change":
		for _, c := range it.Changes {
			verb := "Edit"
			switch c.Kind {
			case "add":
				verb = "Write"
			case "delete":
				verb = "Delete"
			}
			s.track.ToolCall(verb, c.Path)
		}
	case "mcp_tool_call":
		s.track.ToolCall(it.Server+"."+it.Tool, "")
	case "web_search":
		s.track.ToolCall("WebSearch", it.Query)
	}
}

// follow reads the token counts the CLI wrote to the thread's rollout since
// the last line, so that the visit's tokens show while it runs.
func (s *stream) follow() {
	if s.threadID == "" || s.total != nil {
		return
	}
	if s.err != nil {
		return
	}
	if s.rollout.path == "" {
		if s.threadID == s.resumedID && s.resumed.path != "" {
			s.rollout = s.resumed
		} else {
			s.rollout.root = s.env.StateRoot
			s.rollout.path, s.err = rolloutPath(s.ctx, s.env, s.threadID)
		}
		if s.rollout.path == "" {
			return
		}
	}
	changed, err := s.rollout.read()
	if err != nil {
		s.err = err
		return
	}
	if changed {
		s.track.SetUsage(s.rollout.usage().Sub(s.base))
	}
}

// Report is what the events said about the visit. Codex passes no
// tool-use id to MCP servers, so an ask_user call's comes from the
// thread's rollout.
func (s *stream) Report() cliexec.Report {
	r := cliexec.Report{SessionID: s.threadID, Text: s.text, Usage: s.usage(), Failure: s.failure,
		Failed: s.failure != "" && !s.completed}
	if s.askUser && s.threadID != "" && s.err == nil {
		path := s.rollout.path // the thread's, if the visit followed it
		if path == "" {
			path, s.err = rolloutPath(s.ctx, s.env, s.threadID)
		}
		if s.err == nil {
			r.AskUserID, s.err = pendingCallID(s.env.StateRoot, path)
		}
	}
	r.Err = s.err
	return r
}

// usage is the visit's usage: the thread's total when the visit ended (from
// turn.completed, or from the rollout when the CLI was stopped before it)
// less its total before the visit. Codex reports no cost.
func (s *stream) usage() agent.Usage {
	if s.total != nil {
		return s.total.usage().Sub(s.base)
	}
	s.follow()
	return s.rollout.usage().Sub(s.base)
}

// shellCommand is the command inside Codex's shell wrapper
// (`/bin/bash -lc 'go test ./...'`).
func shellCommand(cmd string) string {
	for _, sh := range []string{"/bin/bash -lc ", "bash -lc ", "/bin/sh -c ", "sh -c ", "/bin/zsh -lc ", "zsh -lc "} {
		if rest, ok := strings.CutPrefix(cmd, sh); ok {
			if len(rest) >= 2 && (rest[0] == '\'' || rest[0] == '"') && rest[len(rest)-1] == rest[0] {
				rest = rest[1 : len(rest)-1]
			}
			return rest
		}
	}
	return cmd
}

// rollout follows the token counts in a thread's rollout file: `codex exec
// --json` prints usage only when the turn completes. The rollout lies in
// the state root, where the agent can write: it is read as untrusted.
type rollout struct {
	root, path string
	off        int64
	total      *tokenUsage
}

// maxRollout caps a rollout: a session file Tether would pack.
const maxRollout = packer.DefaultMaxFileBytes

// read takes in the whole lines appended since the last read and reports
// whether they held a new token count. A rollout that is gone reads as
// nothing new; one that is a link, not a regular file, or over maxRollout
// is agent.ErrUnsafeFile.
func (r *rollout) read() (bool, error) {
	if r.path == "" {
		return false, nil
	}
	f, err := openRollout(r.root, r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := f.Seek(r.off, io.SeekStart); err != nil {
		return false, nil
	}
	data, err := io.ReadAll(f.Limit(maxRollout - r.off))
	if err != nil {
		return false, err
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return false, nil
	}
	r.off += int64(end + 1)
	changed := false
	for _, line := range bytes.Split(data[:end], []byte{'\n'}) {
		if !bytes.Contains(line, []byte(`"token_count"`)) {
			continue
		}
		var rec struct {
			Payload struct {
				Type string `json:"type"`
				Info *struct {
					Total tokenUsage `json:"total_token_usage"`
				} `json:"info"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Payload.Type == "token_count" && rec.Payload.Info != nil {
			t := rec.Payload.Info.Total
			r.total, changed = &t, true
		}
	}
	return changed, nil
}

func openRollout(root, path string) (*untrusted.File, error) {
	rel, err := untrusted.Rel(root, path)
	if err != nil {
		return nil, err
	}
	return untrusted.Open(root, rel)
}

// usage is the latest total read (zero before any).
func (r *rollout) usage() agent.Usage {
	if r.total == nil {
		return agent.Usage{}
	}
	return r.total.usage()
}

// rolloutPath is the rollout file of a thread in env, or "" when there is
// none; the packer's path code finds it, as it does for HasSession. A
// rollout that is a link or a special file is agent.ErrUnsafeFile.
func rolloutPath(ctx context.Context, env agent.Env, threadID string) (string, error) {
	path, err := packer.New(Name, env, packer.DefaultLimits(), layout).SessionFile(ctx, threadID)
	switch {
	case errors.Is(err, packer.ErrLinkEntry), errors.Is(err, packer.ErrSpecialEntry), errors.Is(err, packer.ErrExists):
		return "", fmt.Errorf("%w: codex rollout of thread %s: %v", agent.ErrUnsafeFile, threadID, err)
	case err != nil:
		return "", nil
	}
	return path, nil
}

// maxRolloutLine caps one line of a rollout read for the pending call id.
const maxRolloutLine = 64 << 20

// pendingCallID finds the call_id of the session's last ask_user call in its
// rollout (the file at path, below root): Codex passes no tool-use id to
// MCP servers and its --json items carry their own ids, so the rollout is
// the one place that has it.
func pendingCallID(root, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	f, err := openRollout(root, path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	var id string
	sc := bufio.NewScanner(f.Limit(maxRollout))
	sc.Buffer(make([]byte, 64<<10), maxRolloutLine)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"function_call"`)) || !bytes.Contains(line, []byte(askuser.ToolName)) {
			continue
		}
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
	if err := sc.Err(); err != nil && errors.Is(err, agent.ErrUnsafeFile) {
		return "", err
	}
	return id, nil
}

// AskUserNamespace is the tool namespace Codex puts the ask_user MCP tool in
// (the model calls ask_user inside namespace mcp__tether).
const AskUserNamespace = "mcp__" + askuser.ServerName

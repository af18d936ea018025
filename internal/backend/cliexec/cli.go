package cliexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/askuser"
	"github.com/tether-run/tether/internal/hostport"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/sandbox"
)

// CLI is what every CLI executor does alike: it starts a visit the same way,
// runs its program under the same limits and environment rules, and packs
// with the same options. An executor builds one from the Options its own
// Options embed, and keeps to itself only what is particular to its CLI
// (flags, environment, output).
type CLI struct {
	Options
	// Backend is the backend's name; it starts every error the helpers
	// return.
	Backend string
	// Bin is the program, looked up in BinDir (empty: PATH).
	Bin string
	// Facts are the backend's facts, as New was given them: what the CLI
	// reaches by default (ModelEndpoints) is read here, never looked up
	// in a registry above the executors.
	Facts agent.Facts
}

// Available reports whether the CLI can run on this worker: its program is
// installed where the executor looks (agent.ErrNotInstalled if not). A
// node's fallback takes over from a backend that is not available.
func (c CLI) Available() error {
	_, err := Resolve(c.Backend, c.BinDir, c.Bin)
	return err
}

// ModelFor is the model a visit runs: the requested one, else the default.
func (c CLI) ModelFor(requested string) string {
	if requested == "" {
		return c.Model
	}
	return requested
}

// MCPTools are the MCP tools a visit of req gives the CLI, as
// Conversation.MCPTools names them.
func (c CLI) MCPTools(req agent.Request) []string {
	if c.AskUserFor(req) == nil {
		return nil
	}
	return []string{askuser.ServerName + "/" + askuser.ToolName}
}

// AskUserFor is the argv that starts the ask_user MCP server for a visit
// of req: the executor's AskUser, or nil when the node may not ask (no
// server is started then).
func (c CLI) AskUserFor(req agent.Request) []string {
	if !Asks(req) {
		return nil
	}
	return c.AskUser
}

// Asks reports whether a visit of req may ask the user: the node did not
// turn ask_user off. An executor whose CLI asks through the reply
// convention adds the convention only when it may.
func Asks(req agent.Request) bool { return !req.Settings.NoAskUser }

// Check fails a request that does not say where the CLI keeps its state and
// where it works.
func (c CLI) Check(req agent.Request) error {
	if req.Env.StateRoot == "" || req.Env.Workdir == "" {
		return fmt.Errorf("%s: request needs Env.StateRoot and Env.Workdir", c.Backend)
	}
	return nil
}

// Begin starts a visit for req: it checks the request, works out the prompt
// and the model, creates the state root and makes the visit's scratch
// directory. The caller closes the visit.
func (c CLI) Begin(req agent.Request) (*Visit, error) {
	if err := c.Check(req); err != nil {
		return nil, err
	}
	prompt, err := Prompt(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Backend, err)
	}
	if err := os.MkdirAll(req.Env.StateRoot, 0o700); err != nil {
		return nil, fmt.Errorf("%s: state root: %w", c.Backend, err)
	}
	v, err := NewVisit(c.TempDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Backend, err)
	}
	v.Prompt, v.Model = prompt, c.ModelFor(req.Model)
	return v, nil
}

// Spec is the run of the CLI for visit v of req: the program, working
// directory, prompt, limits and heartbeat. The executor adds the arguments,
// the environment and the reader of the output.
func (c CLI) Spec(ctx context.Context, req agent.Request, v *Visit) Spec {
	s := Spec{
		Backend: c.Backend,
		Bin:     c.Bin,
		BinDir:  c.BinDir,
		Dir:     req.Env.Workdir,
		Stdin:   v.Prompt,
		Timeout: c.Timeout,
	}
	if req.Settings.Timeout > 0 {
		s.Timeout = req.Settings.Timeout
	}
	if c.Heartbeat != nil {
		s.Heartbeat = func(d any) { c.Heartbeat(ctx, d) }
		s.HeartbeatEvery = c.HeartbeatEvery
	}
	if c.AskUserFor(req) != nil {
		s.Stop = v.AskUserStop(c.AskUserGrace)
	}
	// Confined or not, the CLI keeps its temporary files in the visit's
	// scratch directory, removed with it, never in the worker's /tmp:
	// CLIs write crash and error reports there that quote the
	// conversation (Gemini CLI's gemini-client-error-*.json).
	s.TempDir = filepath.Join(v.Dir, "tmp")
	_ = os.MkdirAll(s.TempDir, 0o700)
	if c.Sandbox != nil {
		s.Sandbox, s.Confinement = c.Sandbox, c.confinement(req, v, s.TempDir)
		s.ModelEndpoints = c.ModelEndpoints()
	}
	return s
}

// ModelEndpoints are the host:port of the CLI's model: its BaseURL's, or
// the defaults its backend's facts name when the worker sets none.
func (c CLI) ModelEndpoints() []string {
	if c.BaseURL != "" {
		p, err := hostport.EndpointOf(c.BaseURL)
		if err != nil {
			return nil
		}
		return []string{p.String()}
	}
	return c.Facts.ModelEndpoints
}

// confinement is what a confined visit may reach: its state root and
// scratch directory (with tmp, its temporary directory, in it), its home
// (the executor's, else one of the visit's own, never the worker's), and
// the CLI's installation (BinDir and where its links lead, see
// sandbox.CLIBinReadable) and ask_user server.
func (c CLI) confinement(req agent.Request, v *Visit, tmp string) Confinement {
	cf := Confinement{
		Home:     c.Home,
		TempDir:  tmp,
		Writable: []string{req.Env.StateRoot, v.Dir},
	}
	if cf.Home == "" {
		cf.Home = filepath.Join(v.Dir, "home")
	}
	_ = os.MkdirAll(cf.Home, 0o700)
	if c.BinDir != "" {
		cf.Readable = append(cf.Readable, sandbox.CLIBinReadable(c.BinDir)...)
	}
	if ask := c.AskUserFor(req); len(ask) > 0 && filepath.IsAbs(ask[0]) {
		cf.Readable = append(cf.Readable, ask[0])
	}
	return cf
}

// Environ is the environment of the CLI for req: BaseEnv, the executor's
// PassEnv and the node's env names, then set, HOME when Home is set, and
// Env (see the package function).
func (c CLI) Environ(req agent.Request, set ...string) []string {
	set = append([]string(nil), set...)
	if c.Home != "" {
		set = append(set, "HOME="+c.Home)
	}
	set = append(set, c.Env...)
	return Environ(append(append([]string(nil), c.PassEnv...), req.Settings.Env...), set...)
}

// PackerOptions are the options of the backend's session packers.
func (c CLI) PackerOptions() []packer.Option {
	opts := []packer.Option{packer.WithRedact(c.Redact)}
	if c.Policy != nil {
		opts = append(opts, packer.WithPolicy(c.Policy))
	}
	return opts
}

// Pick is the node's value when set, else the executor's default.
func Pick[T comparable](node, def T) T {
	var zero T
	if node != zero {
		return node
	}
	return def
}

// PickList is the node's list when set (non-nil), else the default.
func PickList(node, def []string) []string {
	if node != nil {
		return node
	}
	return def
}

// ReportFailure puts what the CLI reported as its failure (on stdout) in
// front of the stderr tail of err when err is an exit error, since some
// CLIs say why they failed only there. It returns err.
func ReportFailure(err error, failure string) error {
	var ee *agent.ExitError
	if failure != "" && errors.As(err, &ee) {
		ee.StderrTail = failure + "\n" + ee.StderrTail
	}
	return err
}

// Defaults are what an executor's options give every visit, which a
// node's settings override.
type Defaults struct {
	SystemPrompt, AppendSystemPrompt string
	Tools, DisallowedTools           []string
	// Convention adds the ask_user reply convention's instructions after
	// the appended system prompt.
	Convention bool
}

// Merged is what one visit runs with: the node's settings over the
// executor's Defaults.
type Merged struct {
	Model, SystemPrompt, AppendSystemPrompt string
	Tools, DisallowedTools                  []string
}

// Merge is what a visit of req runs with: the node's settings over d.
func (c CLI) Merge(req agent.Request, d Defaults) Merged {
	s := req.Settings
	return Merged{
		Model:              c.ModelFor(req.Model),
		SystemPrompt:       Pick(s.SystemPrompt, d.SystemPrompt),
		AppendSystemPrompt: AppendSystemPrompt(s.AppendSystemPrompt, d.AppendSystemPrompt, d.Convention && Asks(req)),
		Tools:              PickList(s.Tools, d.Tools),
		DisallowedTools:    PickList(s.DisallowedTools, d.DisallowedTools),
	}
}

// Conversation is what m defines of a visit's conversation, with the
// permission the backend maps the node's level to; an executor adds the
// fields of its own (allowed tools, MCP tools).
func (m Merged) Conversation(permission string) Conversation {
	return Conversation{Model: m.Model, SystemPrompt: m.SystemPrompt, AppendSystemPrompt: m.AppendSystemPrompt,
		Tools: m.Tools, DisallowedTools: m.DisallowedTools, Permission: permission}
}

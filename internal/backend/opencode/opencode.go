// Package opencode is the opencode backend: it runs opencode headless
// (`opencode run --format json`, the prompt on stdin) with its data,
// configuration, state and cache directories in the visit's state root,
// a configuration file of the visit's own (OPENCODE_CONFIG) that defines
// the model's provider, the node's permissions and prompts, resumes a
// session with --session ID, forks one with --fork, and reports the
// session id and the visit's usage from the CLI's own events.
//
// opencode keeps its sessions in one SQLite database, so the session
// Tether packs is the session's export (see SessionsDir and sync).
//
// ask_user is Tether's MCP server (Options.AskUser), which the visit's
// configuration gives opencode as the local MCP server "tether": the model
// calls its tool tether_ask_user, and the executor ends the turn as for
// claude_code and codex. With AskUserConvention instead, it is the
// structured-output convention pi and gemini use: a final reply whose last
// lines all start with "ASK_USER:", or a final JSON object with an
// "ask_user" key, pauses the visit with those questions.
package opencode

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/opencode/facts"
	"github.com/tether-run/tether/internal/packer"
)

// Name is the backend's name in graphs and the catalogue.
const Name = facts.Name

// Options configure the executor. The zero value runs `opencode` from PATH
// with the model named as opencode names it (provider/model) and the
// providers and keys of its own configuration.
type Options struct {
	// Options are what every CLI executor takes. BaseURL, when set, is an
	// OpenAI Chat Completions endpoint (with /v1) that the visit's
	// configuration defines as the provider ProviderID, with Model its
	// only model; APIKey reaches the CLI as KeyEnv. AskUser starts the
	// ask_user MCP server unless AskUserConvention is on.
	cliexec.Options
	// SystemPrompt replaces opencode's system prompt (the build agent's
	// prompt); AppendSystemPrompt is added to it as an instructions file.
	SystemPrompt       string
	AppendSystemPrompt string
	// AskUserConvention turns the ask_user convention on (it adds
	// cliexec.AskUserInstructions to the system prompt) in place of the MCP
	// server.
	AskUserConvention bool
	// Tools limits the tools the model is offered; nil keeps opencode's
	// set (see permissionRules).
	Tools []string
}

// ProviderID is the provider the visit's configuration defines at
// Options.BaseURL.
const ProviderID = "tether"

// KeyEnv carries Options.APIKey to the CLI; the configuration file names
// the variable, never the key.
const KeyEnv = "TETHER_OPENCODE_API_KEY"

// Executor runs opencode visits.
type Executor struct {
	opts Options
	cli  cliexec.CLI
}

var _ agent.Backend = (*Executor)(nil)

// New returns an executor.
func New(opts Options) *Executor {
	cli := cliexec.CLI{Options: opts.Options, Backend: Name, Bin: "opencode"}
	if opts.AskUserConvention {
		cli.AskUser = nil
	}
	return &Executor{opts: opts, cli: cli}
}

// Name is the backend's name.
func (e *Executor) Name() string { return Name }

// Packer returns the opencode session packer bound to env.
func (e *Executor) Packer(env agent.Env) agent.SessionPacker {
	return newPacker(env, packer.DefaultLimits(), e.cli.PackerOptions()...)
}

// Available reports whether the CLI is installed on this worker.
func (e *Executor) Available() error { return e.cli.Available() }

// visitSettings is what one visit runs with: the node's settings over the
// executor's options.
type visitSettings struct {
	model, systemPrompt, appendSystemPrompt, permissions string
	tools, disallowedTools                               []string
}

func (e *Executor) settings(req agent.Request) visitSettings {
	s := req.Settings
	return visitSettings{
		model:              e.cli.ModelFor(req.Model),
		systemPrompt:       cliexec.Pick(s.SystemPrompt, e.opts.SystemPrompt),
		appendSystemPrompt: e.appendSystemPrompt(req),
		permissions:        s.Permissions,
		tools:              cliexec.PickList(s.Tools, e.opts.Tools),
		disallowedTools:    s.DisallowedTools,
	}
}

// appendSystemPrompt is the node's appended system prompt, else the
// executor's, followed by the ask_user convention when it is on.
func (e *Executor) appendSystemPrompt(req agent.Request) string {
	return cliexec.AppendSystemPrompt(req.Settings.AppendSystemPrompt, e.opts.AppendSystemPrompt, e.opts.AskUserConvention)
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
		DisallowedTools:    v.disallowedTools,
		Permission:         v.permissions,
		MCPTools:           e.cli.MCPTools(),
	})
}

// Execute runs one visit: a resume first makes the root's database hold
// the session's export (sync), and every visit that completes writes the
// session's export back (export).
func (e *Executor) Execute(ctx context.Context, req agent.Request) (agent.Result, error) {
	var res agent.Result
	if err := e.cli.Check(req); err != nil {
		return res, err
	}
	// A missing session fails before Begin creates the state root and the
	// scratch directory.
	if req.SessionID != "" {
		if _, err := newPacker(req.Env, packer.DefaultLimits()).SessionFile(ctx, req.SessionID); err != nil {
			if errors.Is(err, packer.ErrNoSession) {
				return res, fmt.Errorf("%w: %v", agent.ErrNoSession, err)
			}
			return res, fmt.Errorf("opencode: find session %s: %w", req.SessionID, err)
		}
	}
	visit, err := e.cli.Begin(req)
	if err != nil {
		return res, err
	}
	defer visit.Close()
	v := e.settings(req)
	if v.model == "" && e.opts.BaseURL != "" {
		return res, fmt.Errorf("opencode: no model for the provider at %s: name one on the node or give the worker a default (TETHER_MODEL_OPENCODE)", e.opts.BaseURL)
	}
	if err := quietConfigDir(req.Env.StateRoot); err != nil {
		return res, err
	}
	config, err := e.writeConfig(visit, v)
	if err != nil {
		return res, err
	}
	set := e.env(req, config)
	// Export and import read and write the database only: they need no
	// provider and start no MCP server.
	quiet, err := visit.WriteFile("bookkeeping.json", []byte(bookkeepingConfig))
	if err != nil {
		return res, fmt.Errorf("opencode: %w", err)
	}
	book := e.env(req, quiet)
	if req.SessionID != "" {
		if err := e.sync(ctx, req, visit, book, req.SessionID); err != nil {
			return res, err
		}
		if !req.Fork {
			// Until the export after the visit, the database may hold turns
			// the export does not (a visit that fails): the next resume
			// imports the export again.
			if err := forgetSynced(req.Env.StateRoot, req.SessionID); err != nil {
				return res, err
			}
		}
	}
	st := stream{track: cliexec.NewTracker(Name, req)}
	spec := e.cli.Spec(ctx, req, visit)
	spec.Args, spec.Env, spec.OnLine = e.args(v, req), set, st.line
	out, runErr := cliexec.Run(ctx, spec)
	if runErr != nil {
		return res, cliexec.ReportFailure(runErr, strings.Join(st.errors, "\n"))
	}
	res.SessionID = st.sessionID
	res.Fingerprint = e.Fingerprint(req)
	res.Text = st.text
	res.Usage = st.usage
	res.Usage.CostKnown = e.opts.BaseURL == "" && st.usage.CostUSD > 0
	ask, err := visit.Interaction(st.askUserCall)
	if err != nil {
		return res, fmt.Errorf("opencode: %w", err)
	}
	if ask != nil && res.SessionID != "" {
		// The turn may have been ended for it (out.Stopped), mid-step: the
		// database holds the session up to the tool's result.
		if err := e.export(ctx, req, visit, book, res.SessionID); err != nil {
			return res, err
		}
		res.NeedsInteraction = ask
		return res, nil
	}
	if len(st.errors) > 0 || !st.finished {
		msg := strings.Join(st.errors, "\n")
		if !st.finished && msg == "" {
			msg = "the CLI reported no finished step"
		}
		return res, &agent.ExitError{Backend: Name, Code: out.ExitCode,
			StderrTail: strings.TrimSpace(msg + "\n" + out.StderrTail)}
	}
	if res.SessionID == "" {
		return res, fmt.Errorf("opencode: the CLI reported no session id (stderr: %s)", out.StderrTail)
	}
	if err := e.export(ctx, req, visit, book, res.SessionID); err != nil {
		return res, err
	}
	cliexec.FinishReply(&res, e.opts.AskUserConvention)
	return res, nil
}

func (e *Executor) args(v visitSettings, req agent.Request) []string {
	// The prompt comes on stdin: opencode quotes a message argument that
	// holds a space. --pure loads no plugin from npm.
	a := []string{"run", "--format", "json", "--pure"}
	if m := e.modelRef(v.model); m != "" {
		a = append(a, "--model", m)
	}
	if req.SessionID != "" {
		a = append(a, "--session", req.SessionID)
		if req.Fork {
			a = append(a, "--fork")
		}
	}
	return a
}

// modelRef is the model as opencode names it: provider/model.
func (e *Executor) modelRef(model string) string {
	if model == "" || e.opts.BaseURL == "" {
		return model
	}
	return ProviderID + "/" + model
}

// env is the CLI's environment: the base and the names the worker and the
// node pass (cliexec.Environ), every directory opencode writes in the
// state root, the visit's configuration and key, and the switches that
// keep a headless run off the network and quick.
func (e *Executor) env(req agent.Request, config string) []string {
	root := req.Env.StateRoot
	set := []string{
		"XDG_DATA_HOME=" + filepath.Join(root, ".local", "share"),
		"XDG_CONFIG_HOME=" + filepath.Join(root, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(root, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(root, ".cache"),
		"OPENCODE_CONFIG=" + config,
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
		// A project's .opencode directory would bring its own plugins and
		// their install from npm.
		"OPENCODE_DISABLE_PROJECT_CONFIG=1",
		"OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER=1",
		"OPENCODE_DISABLE_TERMINAL_TITLE=1",
		"NO_COLOR=1",
	}
	if e.opts.APIKey != "" {
		set = append(set, KeyEnv+"="+e.opts.APIKey)
	}
	return e.cli.Environ(req, set...)
}

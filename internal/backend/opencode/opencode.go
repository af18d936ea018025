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
	"fmt"
	"path/filepath"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/opencode/facts"
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
	// only model, reached through the worker's model relay, which holds
	// APIKey (the CLI gets a placeholder as KeyEnv). AskUser starts the
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

// Configured is the executor as the worker's configuration sets it up:
// it calls the ask_user MCP server when the worker has one, and follows
// the reply convention when not.
func Configured(o cliexec.Options) agent.Backend {
	return New(Options{Options: o, AskUserConvention: o.AskUser == nil})
}

// New returns an executor: the visit every CLI runs, with opencode's
// options as its driver.
func New(opts Options) *cliexec.Executor {
	return cliexec.New(facts.Backend, opts.Options, opts, layout, opts.AskUserConvention)
}

// visitSettings is what one visit runs with: the node's settings over the
// executor's options.
type visitSettings struct {
	cliexec.Merged
	permissions string
	// askUser starts the ask_user MCP server (nil: none).
	askUser []string
}

func (o Options) settings(c *cliexec.CLI, req agent.Request) visitSettings {
	return visitSettings{Merged: c.Merge(req, cliexec.Defaults{SystemPrompt: o.SystemPrompt, AppendSystemPrompt: o.AppendSystemPrompt, Tools: o.Tools, Convention: o.AskUserConvention}), permissions: req.Settings.Permissions,
		askUser: c.AskUserFor(req)}
}

// Conversation is what defines the conversation a visit of req runs.
func (o Options) Conversation(c *cliexec.CLI, req agent.Request) cliexec.Conversation {
	v := o.settings(c, req)
	conv := v.Conversation(v.permissions)
	conv.MCPTools = c.MCPTools(req)
	return conv
}

// bookkeeping is the file, in the visit's scratch directory, of the
// configuration of export and import runs: they read and write the
// database only, need no provider and start no MCP server.
const bookkeeping = "bookkeeping.json"

// Launch says how visit v of req runs the CLI: the visit's configuration
// written, and a resumed session's export imported into the root's
// database unless it holds it already (sync).
func (o Options) Launch(ctx context.Context, c *cliexec.CLI, req agent.Request, visit *cliexec.Visit) (cliexec.Launch, error) {
	v := o.settings(c, req)
	if v.Model == "" && o.BaseURL != "" {
		return cliexec.Launch{}, fmt.Errorf("opencode: no model for the provider at %s: name one on the node or give the worker a default (%s)", o.BaseURL, agent.ModelVar(Name))
	}
	if err := quietConfigDir(req.Env.StateRoot); err != nil {
		return cliexec.Launch{}, err
	}
	config, err := o.writeConfig(c, visit, v)
	if err != nil {
		return cliexec.Launch{}, err
	}
	if _, err := visit.WriteFile(bookkeeping, []byte(bookkeepingConfig)); err != nil {
		return cliexec.Launch{}, fmt.Errorf("opencode: %w", err)
	}
	if req.SessionID != "" {
		if err := o.sync(ctx, c, req, visit, req.SessionID); err != nil {
			return cliexec.Launch{}, err
		}
		if !req.Fork {
			// Until the export after the visit, the database may hold turns
			// the export does not (a visit that fails): the next resume
			// imports the export again.
			if err := forgetSynced(req.Env.StateRoot, req.SessionID); err != nil {
				return cliexec.Launch{}, err
			}
		}
	}
	st := &stream{track: cliexec.NewTracker(Name, req), ownProviders: o.BaseURL == ""}
	return cliexec.Launch{Args: o.args(c, v, req), Env: o.env(c, req, visit, config), Output: st}, nil
}

// Finish writes the session's export, which is what its packer packs:
// after every visit that completes, and after one that asked the user
// (the database holds the session up to the tool's result, also when the
// turn was ended for it).
func (o Options) Finish(ctx context.Context, c *cliexec.CLI, req agent.Request, visit *cliexec.Visit, id string) error {
	return o.export(ctx, c, req, visit, id)
}

// bookkeepingEnv is the environment of export and import runs.
func (o Options) bookkeepingEnv(c *cliexec.CLI, req agent.Request, visit *cliexec.Visit) []string {
	return c.Environ(req, o.env(c, req, visit, filepath.Join(visit.Dir, bookkeeping))...)
}

func (o Options) args(c *cliexec.CLI, v visitSettings, req agent.Request) []string {
	// The prompt comes on stdin: opencode quotes a message argument that
	// holds a space. --pure loads no plugin from npm.
	a := []string{"run", "--format", "json", "--pure"}
	if m := o.modelRef(c, v.Model); m != "" {
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
func (o Options) modelRef(c *cliexec.CLI, model string) string {
	if model == "" || o.BaseURL == "" {
		return model
	}
	return ProviderID + "/" + model
}

// env is what the executor sets in the CLI's environment: every directory
// opencode writes in the state root, the visit's configuration and key, and the switches that
// keep a headless run off the network and quick.
func (o Options) env(c *cliexec.CLI, req agent.Request, visit *cliexec.Visit, config string) []string {
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
	if visit.APIKey != "" && o.BaseURL != "" {
		set = append(set, KeyEnv+"="+visit.APIKey)
	}
	return set
}

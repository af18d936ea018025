package cliexec

import (
	"context"
	"time"

	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/treepolicy"
)

// Options are the settings every CLI executor takes alike; each backend's
// Options embeds them beside what is particular to its CLI. The zero value
// runs the CLI from PATH with its own endpoint and model, no key, no time
// limit and no ask_user tool.
type Options struct {
	// BinDir holds the CLI's program; empty means PATH.
	BinDir string
	// BaseURL is the model endpoint the CLI talks to; empty keeps the
	// backend's default (see its Options).
	BaseURL string
	// APIKey is the endpoint's key. It reaches the CLI only in its
	// environment, under the variable its backend names; empty passes
	// none. The worker reads it from its own environment once, at start
	// (internal/config).
	APIKey string
	// Model is the default model; Request.Model overrides it.
	Model string
	// AskUser is the argv that starts the ask_user MCP server, without
	// --record (for the worker: its own executable and
	// askuser.Subcommand), for a CLI with an MCP client. Nil leaves the
	// tool out.
	AskUser []string
	// AskUserGrace is how long the CLI may go on after the agent asked
	// before the executor ends it (default DefaultAskUserGrace).
	AskUserGrace time.Duration
	// Timeout bounds one visit unless the node's settings give their own;
	// zero means only the context bounds it.
	Timeout time.Duration
	// Heartbeat is called with the visit's context every HeartbeatEvery
	// while the CLI runs (for activity.RecordHeartbeat).
	Heartbeat      func(ctx context.Context, details any)
	HeartbeatEvery time.Duration
	// PassEnv names worker environment variables every visit's CLI gets,
	// besides BaseEnv and the node's own env (see Environ).
	PassEnv []string
	// Home is the CLI's HOME, where it keeps caches and logs outside its
	// state root; empty: the worker's own.
	Home string
	// Env is added to the CLI's environment, after the executor's own.
	Env []string
	// TempDir is where per-visit scratch directories go ("" =
	// os.TempDir()).
	TempDir string
	// Sandbox confines the CLI and everything it starts to the visit's
	// working directory, state root, scratch directory and home (see
	// Spec.Confinement); nil runs it unconfined.
	Sandbox *sandbox.Sandbox
	// Redact is what packing the backend's sessions does with a
	// secret-looking token (default packer.RedactDetect).
	Redact packer.RedactMode
	// Policy names the credentials and CLI state files the backend's
	// session archives never hold (packer.WithPolicy); the registry gives
	// every backend the one built from all backends' facts. Nil keeps to
	// treepolicy's base rules.
	Policy *treepolicy.Policy
	// Vars are the worker's values of the backend's variables
	// (agent.Facts.Vars), by name: its own settings, which its
	// constructor reads (BaseURL, APIKey and Model are filled from them).
	Vars map[string]string
}

package backend

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/sandbox"
)

// Config says how a worker runs the backends. The worker's configuration
// (internal/config) reads it from the environment; its zero value runs
// every CLI from PATH with the CLIs' own endpoints and models, and no key.
type Config struct {
	// CLIBin is the directory holding the CLIs (TETHER_CLI_BIN); empty:
	// PATH.
	CLIBin string
	// Vars are the worker's values of each backend's variables
	// (agent.Facts.Vars: its endpoint, key, model and settings of its
	// own), by backend name and then variable name. Keys reach their CLI
	// in its environment only; String and LogValue never show them.
	Vars map[string]map[string]string
	// PassEnv names worker environment variables every agent CLI gets
	// besides the minimal base (cliexec.BaseEnv) and the node's own env
	// (TETHER_PASS_ENV, comma-separated).
	PassEnv []string
	// Redact is what packing a session does with a secret-looking token
	// (TETHER_REDACT).
	Redact packer.RedactMode
	// AskUser is the argv that starts the ask_user MCP server (for the
	// worker: its own executable and askuser.Subcommand); nil leaves the
	// tool out for the CLIs with an MCP client.
	AskUser []string
	// TempDir holds per-visit scratch directories; empty: os.TempDir.
	TempDir string
	// Home is the HOME of every agent CLI, where they keep caches and logs
	// outside their state roots; empty: the worker's own. Several workers
	// in one process (tests) each give their CLIs a home of their own.
	Home string
	// Sandbox confines every agent CLI (TETHER_SANDBOX; see
	// internal/sandbox); nil runs them unconfined.
	Sandbox *sandbox.Sandbox
}

// String describes the configuration without its keys.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("backend.Config{")
	for i, a := range c.LogValue().Group() {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%v", a.Key, a.Value)
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so that %#v shows no key either.
func (c Config) GoString() string { return c.String() }

// LogValue is the configuration as a log line shows it: every variable
// but the keys, and which backends have a key, never the key.
func (c Config) LogValue() slog.Value {
	vars, keyed := catalogue.Shown(c.Vars)
	return slog.GroupValue(
		slog.String("cli_bin", c.CLIBin),
		slog.Any("vars", vars),
		slog.Any("api_keys_for", slices.Compact(keyed)),
		slog.Any("pass_env", c.PassEnv),
		slog.String("redact", c.Redact.String()),
		slog.Any("ask_user", c.AskUser),
		slog.String("temp_dir", c.TempDir),
		slog.String("home", c.Home),
		slog.String("sandbox", c.Sandbox.String()),
	)
}

// New builds every backend a worker offers, in catalogue order. A CLI
// backend whose program is missing still registers: it fails its visits
// with the typed NotInstalled error, which lets a node's fallback take
// over.
func New(cfg Config) ([]agent.Backend, error) {
	binDir := ""
	if cfg.CLIBin != "" {
		binDir = filepath.Clean(cfg.CLIBin)
	}
	if cfg.Home != "" {
		if err := os.MkdirAll(cfg.Home, 0o700); err != nil {
			return nil, fmt.Errorf("backend: the agent CLIs' home: %w", err)
		}
	}
	var out []agent.Backend
	for _, f := range catalogue.All() {
		if !f.Implemented {
			continue
		}
		build, ok := constructors[f.Name]
		if !ok {
			return nil, fmt.Errorf("backend: the catalogue lists %s but this build has no constructor for it; run go generate ./internal/backend", f.Name)
		}
		out = append(out, build(options(f, cfg, binDir)))
	}
	return out, nil
}

// options are the executor options of backend f: the worker-wide ones,
// and its variables, with the endpoint, key and model they name.
func options(f agent.Facts, cfg Config, binDir string) cliexec.Options {
	vars := maps.Clone(cfg.Vars[f.Name])
	o := cliexec.Options{
		BinDir: binDir, AskUser: cfg.AskUser, TempDir: cfg.TempDir, PassEnv: cfg.PassEnv,
		Home: cfg.Home, Redact: cfg.Redact, Sandbox: cfg.Sandbox, Vars: vars,
		Policy: catalogue.SessionPolicy(),
	}
	for _, v := range f.Vars {
		switch v.Role {
		case agent.VarBaseURL:
			o.BaseURL = vars[v.Name]
		case agent.VarAPIKey:
			o.APIKey = vars[v.Name]
		case agent.VarModel:
			o.Model = vars[v.Name]
		}
	}
	return o
}

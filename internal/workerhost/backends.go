package workerhost

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/askuser"
	"github.com/tether-run/tether/internal/backend/claude"
	"github.com/tether-run/tether/internal/backend/codex"
	"github.com/tether-run/tether/internal/backend/pi"
	"github.com/tether-run/tether/internal/config"
)

// BackendConfig says how a worker runs each backend.
type BackendConfig struct {
	// CLIBin is the directory holding claude, codex and pi; empty: PATH.
	CLIBin string
	// AnthropicBaseURL is Claude Code's Messages API endpoint; empty: the
	// CLI's default.
	AnthropicBaseURL string
	// OpenAIBaseURL is the Responses API endpoint Codex uses and the Chat
	// Completions endpoint pi uses; empty: their defaults.
	OpenAIBaseURL string
	// Model names the default model of each CLI backend, by backend name.
	Model map[string]string
	// APIKey, by backend name, is passed to the CLI in its environment
	// only; unset, each CLI backend reads its usual variable
	// (ANTHROPIC_API_KEY, OPENAI_API_KEY).
	APIKey map[string]string
	// AskUser is the argv that starts the ask_user MCP server.
	AskUser []string
	// TempDir holds per-visit scratch directories; empty: os.TempDir.
	TempDir string
	// ClaudePermissionMode is Claude Code's --permission-mode and
	// CodexSandbox Codex's sandbox; empty keeps each CLI's default, which
	// does not let the agent edit files unattended. They are defaults
	// only: a node's permissions override them.
	ClaudePermissionMode string
	CodexSandbox         string
	// PassEnv names worker environment variables every agent CLI gets
	// besides the minimal base (cliexec.BaseEnv) and the node's own env
	// (TETHER_PASS_ENV, comma-separated).
	PassEnv []string
	// Home is the HOME of every agent CLI, where they keep caches and logs
	// outside their state roots; empty: the worker's own. Several workers
	// in one process (tests) each give their CLIs a home of their own.
	Home string
}

// BackendConfigOf is the backend configuration of a worker configured by
// a (config.FromEnv), serving ask_user from this very binary (see
// askuser.Subcommand).
func BackendConfigOf(a config.Agents) BackendConfig {
	cfg := BackendConfig{
		CLIBin:               a.CLIBin,
		AnthropicBaseURL:     a.AnthropicBaseURL,
		OpenAIBaseURL:        a.OpenAIBaseURL,
		Model:                maps.Clone(a.Models),
		ClaudePermissionMode: a.ClaudePermissionMode,
		CodexSandbox:         a.CodexSandbox,
		PassEnv:              a.PassEnv,
	}
	if self, err := os.Executable(); err == nil {
		cfg.AskUser = []string{self, askuser.Subcommand}
	}
	return cfg
}

// NewBackends builds every backend a worker offers. A CLI backend whose
// program is missing still registers: it fails its visits with the typed
// NotInstalled error, which lets a node's fallback take over.
func NewBackends(cfg BackendConfig) (activities.Backends, error) {
	binDir := ""
	if cfg.CLIBin != "" {
		binDir = filepath.Clean(cfg.CLIBin)
	}
	var env []string
	if cfg.Home != "" {
		if err := os.MkdirAll(cfg.Home, 0o700); err != nil {
			return nil, fmt.Errorf("workerhost: the agent CLIs' home: %w", err)
		}
		env = []string{"HOME=" + cfg.Home}
	}
	bs := activities.Backends{
		claude.New(claude.Options{
			BinDir: binDir, BaseURL: cfg.AnthropicBaseURL, Model: cfg.Model["claude_code"], APIKey: cfg.APIKey["claude_code"],
			AskUser: cfg.AskUser, TempDir: cfg.TempDir, PermissionMode: cfg.ClaudePermissionMode, PassEnv: cfg.PassEnv, Env: env,
		}),
		codex.New(codex.Options{
			BinDir: binDir, BaseURL: cfg.OpenAIBaseURL, Model: cfg.Model["codex"], APIKey: cfg.APIKey["codex"],
			AskUser: cfg.AskUser, TempDir: cfg.TempDir, Sandbox: cfg.CodexSandbox, PassEnv: cfg.PassEnv, Env: env,
		}),
		pi.New(pi.Options{
			BinDir: binDir, BaseURL: cfg.OpenAIBaseURL, Model: cfg.Model["pi"], APIKey: cfg.APIKey["pi"],
			AskUser: true, TempDir: cfg.TempDir, PassEnv: cfg.PassEnv, Env: env,
		}),
	}
	return withBuiltins(bs, cfg)
}

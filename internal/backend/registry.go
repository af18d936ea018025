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
	"github.com/tether-run/tether/internal/backend/claude"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/codex"
	"github.com/tether-run/tether/internal/backend/gemini"
	"github.com/tether-run/tether/internal/backend/grok"
	"github.com/tether-run/tether/internal/backend/opencode"
	"github.com/tether-run/tether/internal/backend/pi"
	"github.com/tether-run/tether/internal/backend/scripted"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/sandbox"
)

// Config says how a worker runs each backend. The worker's configuration
// (internal/config) reads it from the environment; its zero value runs
// every CLI from PATH with the CLIs' own endpoints and models, and no key.
type Config struct {
	// CLIBin is the directory holding claude, codex and pi
	// (TETHER_CLI_BIN); empty: PATH.
	CLIBin string
	// AnthropicBaseURL is Claude Code's Messages API endpoint
	// (ANTHROPIC_BASE_URL); empty: the CLI's default.
	AnthropicBaseURL string
	// OpenAIBaseURL is the Responses API endpoint Codex uses and the Chat
	// Completions endpoint pi and opencode use (OPENAI_BASE_URL); empty:
	// their defaults (for opencode: the providers of its own
	// configuration).
	OpenAIBaseURL string
	// GeminiBaseURL is the Gemini API endpoint Gemini CLI uses
	// (GOOGLE_GEMINI_BASE_URL, without /v1beta); empty: its default.
	GeminiBaseURL string
	// GrokBaseURL is the chat completions endpoint grok uses
	// (GROK_BASE_URL); empty: the CLI's default (api.x.ai).
	GrokBaseURL string
	// Models are the default model of each CLI backend, by backend name
	// (TETHER_MODEL_CLAUDE_CODE, TETHER_MODEL_CODEX, TETHER_MODEL_PI,
	// TETHER_MODEL_GEMINI, TETHER_MODEL_GROK, TETHER_MODEL_OPENCODE).
	Models map[string]string
	// APIKeys are the model endpoints' keys, by backend name
	// (ANTHROPIC_API_KEY for claude_code, OPENAI_API_KEY for codex, pi
	// and opencode, GEMINI_API_KEY for gemini). Each reaches its CLI in its environment only; String and
	// LogValue never show them.
	APIKeys map[string]string
	// ClaudePermissionMode is Claude Code's --permission-mode
	// (TETHER_CLAUDE_PERMISSION_MODE) and CodexSandbox Codex's sandbox
	// (TETHER_CODEX_SANDBOX); empty keeps each CLI's default, which does
	// not let the agent edit files unattended. They are defaults only: a
	// node's permissions override them.
	ClaudePermissionMode string
	CodexSandbox         string
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

// LogValue is the configuration as a log line shows it: which backends
// have a key, never the key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("cli_bin", c.CLIBin),
		slog.String("anthropic_base_url", c.AnthropicBaseURL),
		slog.String("openai_base_url", c.OpenAIBaseURL),
		slog.String("gemini_base_url", c.GeminiBaseURL),
		slog.String("grok_base_url", c.GrokBaseURL),
		slog.Any("models", c.Models),
		slog.Any("api_keys_for", slices.Sorted(maps.Keys(c.APIKeys))),
		slog.String("claude_permission_mode", c.ClaudePermissionMode),
		slog.String("codex_sandbox", c.CodexSandbox),
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
	cli := func(name, baseURL string) cliexec.Options {
		return cliexec.Options{
			BinDir: binDir, BaseURL: baseURL, APIKey: cfg.APIKeys[name], Model: cfg.Models[name],
			AskUser: cfg.AskUser, TempDir: cfg.TempDir, PassEnv: cfg.PassEnv, Home: cfg.Home, Redact: cfg.Redact,
			Sandbox: cfg.Sandbox,
		}
	}
	return []agent.Backend{
		scripted.New(scripted.Options{Redact: cfg.Redact}),
		claude.New(claude.Options{Options: cli(ClaudeCode, cfg.AnthropicBaseURL), PermissionMode: cfg.ClaudePermissionMode}),
		codex.New(codex.Options{Options: cli(Codex, cfg.OpenAIBaseURL), Sandbox: cfg.CodexSandbox}),
		pi.New(pi.Options{Options: cli(Pi, cfg.OpenAIBaseURL), AskUserConvention: true}),
		gemini.New(gemini.Options{Options: cli(Gemini, cfg.GeminiBaseURL), AskUserConvention: true}),
		grok.New(grok.Options{Options: cli(Grok, cfg.GrokBaseURL), AskUserConvention: true}),
		// opencode calls the ask_user MCP server when the worker has one.
		opencode.New(opencode.Options{Options: cli(Opencode, cfg.OpenAIBaseURL), AskUserConvention: cfg.AskUser == nil}),
	}, nil
}

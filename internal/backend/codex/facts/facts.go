// Package facts is what Tether knows about the codex backend without
// running it; the catalogue reads it, so it imports nothing but the
// contract.
package facts

import "github.com/tether-run/tether/internal/agent"

// Name is the backend's name in graphs and the catalogue.
const Name = "codex"

// Bypass is the permission a node's full level maps to: no sandbox and
// no approvals (--dangerously-bypass-approvals-and-sandbox).
const Bypass = "bypass"

// Sandboxes maps a node's permission level to Codex's sandbox: read-only
// refuses every write (apply_patch and shell alike), workspace-write allows
// writes inside the working directory, and full runs without a sandbox.
// Measured as root in this project's container: both sandboxes work there.
var Sandboxes = map[string]string{
	agent.PermissionReadOnly: "read-only",
	agent.PermissionEdit:     "workspace-write",
	agent.PermissionFull:     Bypass,
}

// SandboxVar is the worker's default sandbox.
const SandboxVar = "TETHER_CODEX_SANDBOX"

// Backend are the backend's facts. Codex has no tool allowlist or
// denylist: its tools come from its features and sandbox, not from names.
// Its CLI reports tokens but no price.
var Backend = agent.Facts{
	Name: Name, Implemented: true, Persist: true, NoCost: true,
	MCP: true, CLI: "codex", Pin: "AGENT_CLI_CODEX", Wire: agent.WireResponses,
	Vars: []agent.Var{
		{Name: "OPENAI_BASE_URL", Role: agent.VarBaseURL, Doc: "Codex's Responses API endpoint, with its /v1"},
		{Name: "OPENAI_API_KEY", Role: agent.VarAPIKey, Doc: "the endpoint's key, which the worker's model relay holds: the CLI gets a placeholder"},
		{Name: agent.ModelVar(Name), Role: agent.VarModel, Doc: "the default model (a node's `model:` wins)"},
		{Name: SandboxVar, Role: agent.VarSetting, Doc: "its sandbox (-s) for nodes without `permissions:`"},
	},
	Honours:        []string{agent.SettingPermissions, agent.SettingSystemPrompt, agent.SettingAppendSystemPrompt},
	Permissions:    Sandboxes,
	Credentials:    []string{".codex/auth.json*"},
	ModelEndpoints: []string{"api.openai.com:443"},
	ModelURL:       "https://api.openai.com/v1",
	State: []string{
		"auth.json*",      // its credentials, wherever a layout puts them
		"config.toml",     // its config (providers, keys)
		"installation_id", // the machine's identity
		// its state databases
		"*.sqlite", "*.sqlite-wal", "*.sqlite-shm", "*.sqlite-journal",
	},
}

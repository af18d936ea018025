// Package facts is what Tether knows about the claude_code backend
// without running it; the catalogue reads it, so it imports nothing but
// the contract.
package facts

import "github.com/tether-run/tether/internal/agent"

// Name is the backend's name in graphs and the catalogue.
const Name = "claude_code"

// PermissionModes maps a node's permission level to Claude Code's
// --permission-mode. read-only is dontAsk: in a non-interactive run it
// denies every tool use that needs approval (Write, Edit, most Bash) and
// tells the model so, while reads go on.
var PermissionModes = map[string]string{
	agent.PermissionReadOnly: "dontAsk",
	agent.PermissionEdit:     "acceptEdits",
	agent.PermissionFull:     "bypassPermissions",
}

// PermissionModeVar is the worker's default --permission-mode.
const PermissionModeVar = "TETHER_CLAUDE_PERMISSION_MODE"

// Backend are the backend's facts.
var Backend = agent.Facts{
	Name: Name, Implemented: true, Persist: true,
	MCP: true, CLI: "claude", Pin: "AGENT_CLI_CLAUDE_CODE", Wire: agent.WireAnthropic,
	Vars: []agent.Var{
		{Name: "ANTHROPIC_BASE_URL", Role: agent.VarBaseURL, Doc: "Claude Code's Messages API endpoint"},
		{Name: "ANTHROPIC_API_KEY", Role: agent.VarAPIKey, Doc: "the endpoint's key, which the worker's model relay holds: the CLI gets a placeholder"},
		{Name: agent.ModelVar(Name), Role: agent.VarModel, Doc: "the default model (a node's `model:` wins)"},
		{Name: PermissionModeVar, Role: agent.VarSetting, Doc: "its --permission-mode for nodes without `permissions:`"},
	},
	Honours:     agent.AllSettings,
	Permissions: PermissionModes,
	Credentials: []string{
		".credentials.json*", // OAuth tokens
		".claude.json*",      // account state
	},
	ModelEndpoints: []string{"api.anthropic.com:443"},
	ModelURL:       "https://api.anthropic.com",
	State: []string{
		"settings*.json", // its settings (settings.local.json too)
		"backups",        // config backups
		"telemetry",      // telemetry spools
	},
}

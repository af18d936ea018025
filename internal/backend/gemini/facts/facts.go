// Package facts is what Tether knows about the gemini backend without
// running it; the catalogue reads it, so it imports nothing but the
// contract.
package facts

import "github.com/tether-run/tether/internal/agent"

// Name is the backend's name in graphs and the catalogue.
const Name = "gemini"

// ApprovalModes maps a node's permission level to Gemini CLI's
// --approval-mode. In a headless run the CLI offers the model no tool that
// would need an approval, so "default" leaves it the read-only tools
// (read_file, list_directory, grep_search, glob, ...), auto_edit adds
// write_file and replace, and yolo adds run_shell_command.
var ApprovalModes = map[string]string{
	agent.PermissionReadOnly: "default",
	agent.PermissionEdit:     "auto_edit",
	agent.PermissionFull:     "yolo",
}

// Backend are the backend's facts. Gemini CLI reports tokens but no price.
var Backend = agent.Facts{
	Name: Name, Implemented: true, Persist: true, NoCost: true,
	CLI: "gemini", Pin: "AGENT_CLI_GEMINI_CLI", Wire: agent.WireGemini,
	Vars: []agent.Var{
		{Name: "GOOGLE_GEMINI_BASE_URL", Role: agent.VarBaseURL, Doc: "Gemini CLI's Gemini API endpoint, without /v1beta"},
		{Name: "GEMINI_API_KEY", Role: agent.VarAPIKey, Doc: "the endpoint's key, which the worker's model relay holds: the CLI gets a placeholder"},
		{Name: agent.ModelVar(Name), Role: agent.VarModel, Doc: "the default model (a node's `model:` wins)"},
	},
	Honours:     agent.AllSettings,
	Permissions: ApprovalModes,
	Credentials: []string{
		".gemini/oauth_creds.json*",     // OAuth tokens
		".gemini/google_accounts.json*", // the signed-in account
		".gemini/settings.json*",        // may hold API keys
	},
	ModelEndpoints: []string{"generativelanguage.googleapis.com:443"},
	ModelURL:       "https://generativelanguage.googleapis.com",
}

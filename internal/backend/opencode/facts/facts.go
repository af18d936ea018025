// Package facts is what Tether knows about the opencode backend without
// running it; the catalogue reads it, so it imports nothing but the
// contract.
package facts

import (
	"sort"
	"strings"

	"github.com/tether-run/tether/internal/agent"
)

// Name is the backend's name in graphs and the catalogue.
const Name = "opencode"

// Permissions maps a node's permission level to the rules of opencode's
// "permission" configuration the executor writes for the visit. Every rule
// is allow or deny, never ask: a headless `opencode run` has nobody to
// ask. A tool whose every use is denied is not offered to the model at
// all: read-only leaves read, grep, glob, list, webfetch, todo and task;
// edit adds edit and write (and opencode's patch tool); full adds bash.
var Permissions = map[string]map[string]string{
	agent.PermissionReadOnly: {"*": "allow", "edit": "deny", "bash": "deny"},
	agent.PermissionEdit:     {"*": "allow", "edit": "allow", "bash": "deny"},
	agent.PermissionFull:     {"*": "allow", "edit": "allow", "bash": "allow"},
}

// Backend are the backend's facts. opencode prices a visit only for a
// model its provider configuration gives a price; the executor's
// OpenAI-compatible provider has none, so its cost is not known.
var Backend = agent.Facts{
	Name: Name, Implemented: true, Persist: true,
	MCP: true, CLI: "opencode", Pin: "AGENT_CLI_OPENCODE", Wire: agent.WireChat,
	Vars: []agent.Var{
		{Name: "OPENAI_BASE_URL", Role: agent.VarBaseURL, Doc: "opencode's Chat Completions endpoint, with its /v1 (empty: the providers of its own configuration)"},
		{Name: "OPENAI_API_KEY", Role: agent.VarAPIKey, Doc: "the endpoint's key, which the worker's model relay holds: the CLI gets a placeholder"},
		{Name: agent.ModelVar(Name), Role: agent.VarModel, Doc: "the default model (a node's `model:` wins)"},
	},
	Honours:     agent.AllSettings,
	Permissions: rules(Permissions),
	Credentials: []string{
		".local/share/opencode/auth.json*",     // provider keys and OAuth tokens (`opencode auth login`)
		".local/share/opencode/mcp-auth.json*", // MCP servers' OAuth tokens
		".config/opencode/opencode.json*",      // a user config may hold provider keys
		".config/opencode/opencode.jsonc*",
		".config/opencode/config.json*",
	},
}

// rules writes each level's rules as the catalogue shows them:
// "*=allow,bash=deny,edit=deny".
func rules(m map[string]map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for level, r := range m {
		var parts []string
		for tool, action := range r {
			parts = append(parts, tool+"="+action)
		}
		sort.Strings(parts)
		out[level] = strings.Join(parts, ",")
	}
	return out
}

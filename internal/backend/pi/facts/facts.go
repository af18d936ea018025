// Package facts is what Tether knows about the pi backend without running
// it; the catalogue reads it, so it imports nothing but the contract.
package facts

import (
	"strings"

	"github.com/tether-run/tether/internal/agent"
)

// Name is the backend's name in graphs and the catalogue.
const Name = "pi"

// PermissionTools maps a node's permission level to pi's tool allowlist:
// pi has no permission modes, so what the agent may do is which of its
// built-in tools it has.
var PermissionTools = map[string][]string{
	agent.PermissionReadOnly: {"read", "grep", "find", "ls"},
	agent.PermissionEdit:     {"read", "grep", "find", "ls", "edit", "write"},
	agent.PermissionFull:     {"read", "bash", "edit", "write", "grep", "find", "ls"},
}

// Backend are the backend's facts.
var Backend = agent.Facts{
	Name: Name, Implemented: true, Persist: true,
	CLI: "pi", Pin: "AGENT_CLI_PI", Wire: agent.WireChat,
	Vars: []agent.Var{
		{Name: "OPENAI_BASE_URL", Role: agent.VarBaseURL, Doc: "pi's Chat Completions endpoint, with its /v1"},
		{Name: "OPENAI_API_KEY", Role: agent.VarAPIKey, Doc: "the endpoint's key, which the worker's model relay holds: the CLI gets a placeholder"},
		{Name: agent.ModelVar(Name), Role: agent.VarModel, Doc: "the default model (a node's `model:` wins)"},
	},
	Honours:     agent.AllSettings,
	Permissions: joined(PermissionTools),
	Credentials: []string{
		".pi/agent/auth.json*",
		".pi/agent/models.json*", // provider keys
	},
	ModelEndpoints: []string{"api.openai.com:443"},
	ModelURL:       "https://api.openai.com/v1",
	State: []string{
		"auth.json*",     // its credentials, wherever a layout puts them
		"models.json*",   // provider keys
		"settings*.json", // its settings
	},
}

func joined(m map[string][]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = strings.Join(v, ",")
	}
	return out
}

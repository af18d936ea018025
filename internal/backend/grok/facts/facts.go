// Package facts is what Tether knows about the grok backend without
// running it; the catalogue reads it, so it imports nothing but the
// contract.
package facts

import "github.com/tether-run/tether/internal/agent"

// Name is the backend's name in graphs and the catalogue.
const Name = "grok"

// Backend are the backend's facts. grok keeps no conversation it could
// resume (ADR-089: no persist capability), prints no usage, and has no
// permission modes, tool lists or system prompt flag, so it honours none
// of those settings.
var Backend = agent.Facts{
	Name: Name, Implemented: true, Persist: false, NoCost: true,
	CLI: "grok", Pin: "AGENT_CLI_GROK", Wire: agent.WireChat,
	Vars: []agent.Var{
		{Name: "GROK_BASE_URL", Role: agent.VarBaseURL, Doc: "grok's Chat Completions endpoint, with its /v1"},
		{Name: "GROK_API_KEY", Role: agent.VarAPIKey, Doc: "the endpoint's key, which the worker's model relay holds: the CLI gets a placeholder"},
		{Name: agent.ModelVar(Name), Role: agent.VarModel, Doc: "the default model (a node's `model:` wins)"},
	},
	Credentials: []string{
		".grok/user-settings.json*", // holds the API key once given as a flag
	},
	ModelEndpoints: []string{"api.x.ai:443"},
	ModelURL:       "https://api.x.ai/v1",
}

package opencode

import (
	"encoding/json"
	"fmt"

	"github.com/tether-run/tether/internal/askuser"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/opencode/facts"
)

// AskUserTool is the name opencode gives the ask_user MCP tool: the
// server's name, "_", the tool's.
const AskUserTool = askuser.ServerName + "_" + askuser.ToolName

// bookkeepingConfig is the configuration of the export and import runs.
const bookkeepingConfig = `{"autoupdate": false, "share": "disabled", "snapshot": false, "mcp": {}}` + "\n"

// permissionOf is the permission that governs a tool: opencode's write,
// patch and multiedit tools ask for "edit".
var permissionOf = map[string]string{"write": "edit", "patch": "edit", "multiedit": "edit", "apply_patch": "edit"}

func permissionKey(tool string) string {
	if p, ok := permissionOf[tool]; ok {
		return p
	}
	return tool
}

// permissionRules is the visit's "permission" configuration: the node's
// permission level (facts.Permissions), narrowed by its tools (every
// other permission denied) and disallowed tools (denied). opencode offers
// the model no tool whose every use is denied, and a headless run has
// nobody to ask, so every rule is allow or deny. The "*" rule comes first
// (encoding/json sorts the keys, and "*" sorts before every name), so the
// named rules override it.
func permissionRules(v visitSettings, askUser bool) map[string]string {
	rules := map[string]string{"*": "allow"}
	for k, a := range facts.Permissions[v.permissions] {
		rules[k] = a
	}
	if v.Tools != nil {
		level := rules
		rules = map[string]string{"*": "deny"}
		for _, t := range v.Tools {
			k := permissionKey(t)
			a, ok := level[k]
			if !ok {
				a = level["*"]
			}
			rules[k] = a
		}
	}
	for _, t := range v.DisallowedTools {
		rules[permissionKey(t)] = "deny"
	}
	if askUser {
		rules[AskUserTool] = "allow"
	}
	return rules
}

// writeConfig writes the visit's configuration file into its scratch
// directory (never into the state root, so no packer sees it) and returns
// its path. It names the key's variable, never the key: opencode reads
// {env:NAME} itself.
func (o Options) writeConfig(c *cliexec.CLI, visit *cliexec.Visit, v visitSettings) (string, error) {
	// The title agent would send every new session's first prompt to the
	// model a second time, for a title nobody reads.
	agents := map[string]any{"title": map[string]any{"disable": true}}
	if v.SystemPrompt != "" {
		agents["build"] = map[string]any{"prompt": v.SystemPrompt}
	}
	cfg := map[string]any{
		"autoupdate": false,
		"share":      "disabled",
		// Snapshots are opencode's undo: a git commit of the working
		// directory at every step, which Tether's workspace snapshots do
		// instead.
		"snapshot":   false,
		"agent":      agents,
		"permission": permissionRules(v, v.askUser != nil),
		"mcp":        map[string]any{},
	}
	if v.askUser != nil {
		cfg["mcp"] = map[string]any{askuser.ServerName: map[string]any{
			"type": "local", "command": askuser.Command(v.askUser, visit.Record), "enabled": true,
		}}
	}
	if m := o.modelRef(c, v.Model); m != "" {
		cfg["model"], cfg["small_model"] = m, m
	}
	if o.BaseURL != "" {
		opts := map[string]any{"baseURL": cliexec.Pick(visit.BaseURL, o.BaseURL)}
		if visit.APIKey != "" {
			opts["apiKey"] = "{env:" + KeyEnv + "}"
		}
		cfg["provider"] = map[string]any{ProviderID: map[string]any{
			// Built into opencode: nothing is installed at run time.
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Tether",
			"options": opts,
			"models":  map[string]any{v.Model: map[string]any{"name": v.Model}},
		}}
	}
	if v.AppendSystemPrompt != "" {
		p, err := visit.WriteFile("instructions.md", []byte(v.AppendSystemPrompt+"\n"))
		if err != nil {
			return "", fmt.Errorf("opencode: %w", err)
		}
		cfg["instructions"] = []string{p}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	p, err := visit.WriteFile("opencode.json", b)
	if err != nil {
		return "", fmt.Errorf("opencode: %w", err)
	}
	return p, nil
}

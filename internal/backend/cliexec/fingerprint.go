package cliexec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
)

// Conversation is what defines a conversation for its fingerprint. Fields
// that do not change what the model sees or may do (base URL, API key,
// working directory, state root, timeouts, the prompt) are deliberately not
// part of it.
type Conversation struct {
	Backend            string   `json:"backend"`
	Model              string   `json:"model"`
	SystemPrompt       string   `json:"system_prompt"`
	AppendSystemPrompt string   `json:"append_system_prompt"`
	Tools              []string `json:"tools"`
	AllowedTools       []string `json:"allowed_tools"`
	DisallowedTools    []string `json:"disallowed_tools"`
	Permission         string   `json:"permission"`
	// MCPTools are the MCP tools the executor configures, as server/tool.
	MCPTools []string `json:"mcp_tools"`
}

// Fingerprint is the hex sha256 of the conversation's canonical JSON: the
// fields above in declaration order, every list sorted and never null.
func Fingerprint(c Conversation) string {
	norm := func(in []string) []string {
		out := append([]string{}, in...)
		slices.Sort(out)
		return slices.Compact(out)
	}
	c.Tools, c.AllowedTools, c.DisallowedTools, c.MCPTools =
		norm(c.Tools), norm(c.AllowedTools), norm(c.DisallowedTools), norm(c.MCPTools)
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

package agent

import "time"

// Permission levels of an agent node: what the agent may do unattended.
// Each backend maps them onto its CLI's own controls (docs/backends.md).
const (
	// PermissionReadOnly lets the agent read the working directory but
	// never change it.
	PermissionReadOnly = "read-only"
	// PermissionEdit adds writing and editing files in the working
	// directory.
	PermissionEdit = "edit"
	// PermissionFull lets the agent do anything, shell commands included,
	// without a sandbox.
	PermissionFull = "full"
)

// Settings is what an agent node says its agent may do and how it is
// instructed. Every field is optional: an empty one keeps the executor's
// worker-wide default, and a set one overrides it.
type Settings struct {
	// Permissions is one of the Permission* levels, or "".
	Permissions string
	// Tools is an allowlist and DisallowedTools a denylist of the
	// backend's own tool names; nil keeps the default.
	Tools, DisallowedTools []string
	// SystemPrompt replaces the backend's system prompt;
	// AppendSystemPrompt is added to it.
	SystemPrompt, AppendSystemPrompt string
	// NoAskUser gives the agent no way to ask the user: no ask_user tool
	// (so no MCP server), no reply convention. A visit that asks anyway
	// fails.
	NoAskUser bool
	// Env names worker environment variables passed on to the agent's
	// process (names only: the values are the worker's).
	Env []string
	// Timeout bounds the visit; zero keeps the executor's.
	Timeout time.Duration
}

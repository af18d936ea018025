// Package backend is Tether's registry of agent backends. It holds the
// catalogue of known backend names and their capabilities, which graph
// validation and session resolution read, and it is the one place that
// builds the backends a worker runs (New), so the capability table and the
// worker's backend list cannot disagree.
//
// What a backend is (an executor, a session packer) is the contract in
// internal/agent. Everything about one backend (how to drive its CLI,
// where its session files live) is in its own subpackage: claude, codex,
// pi, gemini, grok, scripted; cliexec is what the CLI executors share.
package backend

import (
	"slices"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/claude"
	"github.com/tether-run/tether/internal/backend/codex"
	"github.com/tether-run/tether/internal/backend/gemini"
	"github.com/tether-run/tether/internal/backend/grok"
	"github.com/tether-run/tether/internal/backend/pi"
	"github.com/tether-run/tether/internal/backend/scripted"
)

// Names of the known backends.
const (
	Scripted   = scripted.Name
	ClaudeCode = claude.Name
	Codex      = codex.Name
	Pi         = pi.Name
	Gemini     = gemini.Name
	Kimi       = "kimi"
	Grok       = grok.Name
)

// Info is what Tether knows about a backend without running it.
type Info struct {
	Name string
	// Implemented reports whether this build has an executor for it.
	Implemented bool
	// NoCost marks a backend whose CLI reports tokens but no price.
	NoCost bool
	// Persist reports whether the backend can resume a conversation on
	// another machine: it has a packer and a resume flag.
	Persist bool
	// Honours lists the agent settings the backend can apply (SettingPermissions,
	// SettingTools, ...); a node that sets another one is refused by graph
	// validation. Env and Timeout every backend honours.
	Honours []string
}

// Names of the agent settings that not every backend can apply, as the
// graph DSL spells them.
const (
	SettingPermissions        = "permissions"
	SettingTools              = "tools"
	SettingDisallowedTools    = "disallowed_tools"
	SettingSystemPrompt       = "system_prompt"
	SettingAppendSystemPrompt = "append_system_prompt"
)

var allSettings = []string{SettingPermissions, SettingTools, SettingDisallowedTools, SettingSystemPrompt, SettingAppendSystemPrompt}

var catalogue = []Info{
	// The scripted agent has no tools to limit; it takes every setting into
	// its fingerprint, so that a dry run behaves like the real backend.
	{Name: Scripted, Implemented: true, Persist: true, Honours: allSettings},
	{Name: ClaudeCode, Implemented: true, Persist: true, Honours: allSettings},
	// Codex has no tool allowlist or denylist: its tools come from its
	// features and sandbox, not from names.
	{Name: Codex, Implemented: true, Persist: true, NoCost: true, Honours: []string{SettingPermissions, SettingSystemPrompt, SettingAppendSystemPrompt}},
	{Name: Pi, Implemented: true, Persist: true, Honours: allSettings},
	// Gemini CLI reports tokens but no price.
	{Name: Gemini, Implemented: true, Persist: true, NoCost: true, Honours: allSettings},
	// grok keeps no conversation it could resume (ADR-089: no persist),
	// and has no permission modes, tool lists or system prompt flag.
	{Name: Grok, Implemented: true, Persist: false, NoCost: true},
	// Known to ADR-089 as a backend without the persist capability; this
	// build has no executor for it (its CLI, kimi-cli on the Python
	// registry, cannot be installed where Tether is built and tested:
	// docs/backends.md), so a graph naming it is refused (G046) instead of
	// failing at run time.
	{Name: Kimi, Persist: false},
}

// ReportsCost reports whether a backend's visits come with a price.
func ReportsCost(name string) bool {
	b, ok := Lookup(name)
	return ok && b.Implemented && !b.NoCost
}

// Implemented lists the backends this build can run, in catalogue order.
func Implemented() []string {
	var out []string
	for _, b := range catalogue {
		if b.Implemented {
			out = append(out, b.Name)
		}
	}
	return out
}

// Honours reports whether backend name can apply the agent setting.
func Honours(name, setting string) bool {
	b, ok := Lookup(name)
	if !ok {
		return false
	}
	return slices.Contains(b.Honours, setting)
}

// Permissions lists the permission levels, from least to most.
func Permissions() []string {
	return []string{agent.PermissionReadOnly, agent.PermissionEdit, agent.PermissionFull}
}

// Lookup returns the catalogue entry for name.
func Lookup(name string) (Info, bool) {
	for _, b := range catalogue {
		if b.Name == name {
			return b, true
		}
	}
	return Info{}, false
}

// Known lists every backend name, in catalogue order.
func Known() []string {
	out := make([]string, len(catalogue))
	for i, b := range catalogue {
		out[i] = b.Name
	}
	return out
}

// HasPersist reports whether name is a backend with the persist capability.
func HasPersist(name string) bool {
	b, ok := Lookup(name)
	return ok && b.Persist
}

// Package backend is Tether's registry of agent backends: the one place
// that builds the backends a worker runs (New), one for each name the
// catalogue (internal/catalogue) says is implemented, so the capability
// table and the worker's backend list cannot disagree. The catalogue
// itself links no executor; this package links them all.
//
// What a backend is (an executor, a session packer) is the contract in
// internal/agent. Everything about one backend (how to drive its CLI,
// where its session files live) is in its own subpackage: claude, codex,
// pi, gemini, grok, opencode, scripted; cliexec is what the CLI executors share.
package backend

import (
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
)

// Names of the known backends (the catalogue's).
const (
	Scripted   = catalogue.Scripted
	ClaudeCode = catalogue.ClaudeCode
	Codex      = catalogue.Codex
	Pi         = catalogue.Pi
	Gemini     = catalogue.Gemini
	Kimi       = catalogue.Kimi
	Grok       = catalogue.Grok
	Opencode   = catalogue.Opencode
)

// Info is what Tether knows about a backend without running it.
type Info = agent.Facts

// Names of the agent settings that not every backend can apply.
const (
	SettingPermissions        = agent.SettingPermissions
	SettingTools              = agent.SettingTools
	SettingDisallowedTools    = agent.SettingDisallowedTools
	SettingSystemPrompt       = agent.SettingSystemPrompt
	SettingAppendSystemPrompt = agent.SettingAppendSystemPrompt
)

// The catalogue, for the registry's callers; graph validation and
// session resolution read internal/catalogue directly.
var (
	ReportsCost = catalogue.ReportsCost
	Implemented = catalogue.Implemented
	Honours     = catalogue.Honours
	Permissions = catalogue.Permissions
	Lookup      = catalogue.Lookup
	Known       = catalogue.Known
	HasPersist  = catalogue.HasPersist
)

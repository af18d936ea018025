// Package facts is what Tether knows about the scripted backend without
// running it; the catalogue reads it, so it imports nothing but the
// contract.
package facts

import "github.com/tether-run/tether/internal/agent"

// Name is the backend's name in graphs and the catalogue.
const Name = "scripted"

// Backend are the backend's facts. The scripted agent has no tools to
// limit; it takes every setting into its fingerprint, so that a dry run
// behaves like the real backend. It has no login.
var Backend = agent.Facts{
	Name: Name, Implemented: true, Persist: true, Script: true,
	Honours: agent.AllSettings,
	Permissions: map[string]string{
		agent.PermissionReadOnly: agent.PermissionReadOnly,
		agent.PermissionEdit:     agent.PermissionEdit,
		agent.PermissionFull:     agent.PermissionFull,
	},
}

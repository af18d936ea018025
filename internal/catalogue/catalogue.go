// Package catalogue is the table of known agent backends: their names and
// what each can do (agent.Facts), composed from the facts every backend
// package declares beside its code, and the one credential policy built
// from their login and state files. Their transcript readers are
// registered apart (internal/catalogue/transcripts). It links no executor: graph validation, session
// resolution and the tree engines read it without pulling in a CLI
// driver, the MCP server or a session log. The constructors are the
// registry's (internal/backend).
package catalogue

import (
	"slices"
	"sync"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/treepolicy"
)

// backends is the registration of every backend: the folders of
// internal/backend (entries_gen.go, which `go generate ./internal/backend`
// writes from them: a new backend registers itself by its folder and its
// pin in .env), then the backends known without a folder.
var backends = append(slices.Clip(folders),
	// Known to ADR-089 as a backend without the persist capability; this
	// build has no executor for it (its CLI, kimi-cli on the Python
	// registry, cannot be installed where Tether is built and tested:
	// docs/backends.md), so a graph naming it is refused (G046) instead of
	// failing at run time.
	agent.Facts{Name: "kimi"},
)

// All returns every backend's facts, in catalogue order.
func All() []agent.Facts { return slices.Clone(backends) }

// Lookup returns the facts of the backend called name.
func Lookup(name string) (agent.Facts, bool) {
	for _, b := range backends {
		if b.Name == name {
			return b, true
		}
	}
	return agent.Facts{}, false
}

// Known lists every backend name, in catalogue order.
func Known() []string {
	out := make([]string, len(backends))
	for i, b := range backends {
		out[i] = b.Name
	}
	return out
}

// Implemented lists the backends this build can run, in catalogue order.
func Implemented() []string {
	var out []string
	for _, b := range backends {
		if b.Implemented {
			out = append(out, b.Name)
		}
	}
	return out
}

// ReadsScript reports whether backend name reads a node's script.
func ReadsScript(name string) bool {
	b, ok := Lookup(name)
	return ok && b.Script
}

// HasPersist reports whether name is a backend with the persist capability.
func HasPersist(name string) bool {
	b, ok := Lookup(name)
	return ok && b.Persist
}

// ReportsCost reports whether a backend's visits come with a price.
func ReportsCost(name string) bool {
	b, ok := Lookup(name)
	return ok && b.Implemented && !b.NoCost
}

// Honours reports whether backend name can apply the agent setting.
func Honours(name, setting string) bool {
	b, ok := Lookup(name)
	return ok && slices.Contains(b.Honours, setting)
}

// Permissions lists the permission levels, from least to most.
func Permissions() []string {
	return []string{agent.PermissionReadOnly, agent.PermissionEdit, agent.PermissionFull}
}

// Credentials lists every backend's login file patterns, in catalogue
// order.
func Credentials() []string {
	var out []string
	for _, b := range backends {
		out = append(out, b.Credentials...)
	}
	return out
}

// Policy is the one credential policy of every tree Tether packs or
// snapshots: treepolicy's base rules plus every backend's login files.
// A session archive and a workspace snapshot both ask it, so they refuse
// the same files, and a login of one CLI is refused in any backend's tree.
var Policy = sync.OnceValue(func() *treepolicy.Policy { return treepolicy.New(Credentials()...) })

// States lists every backend's state file patterns (agent.Facts.State),
// in catalogue order.
func States() []string {
	var out []string
	for _, b := range backends {
		out = append(out, b.State...)
	}
	return out
}

// SessionPolicy is the policy of every session archive: Policy's
// credentials, for sessions (treepolicy.Policy.ForSessions), with every
// backend's state files. The registry hands it to each backend's packer
// (packer.WithPolicy), so a state file of one CLI is refused in any
// backend's archive.
var SessionPolicy = sync.OnceValue(func() *treepolicy.Policy { return Policy().ForSessions(States()...) })

// StateExamples are paths SessionPolicy must refuse beyond the
// credentials: one for each backend's state pattern, at the top and
// deeper in a tree.
func StateExamples() []string {
	var out []string
	for _, b := range backends {
		for _, s := range b.State {
			out = append(out, treepolicy.Example(s), "dir-of-"+b.Name+"/"+treepolicy.Example(s))
		}
	}
	return out
}

// CredentialExamples are paths Policy must refuse: treepolicy's examples
// of the base rules, and one path for each backend's login pattern, under
// the backend's name so that each stands for a file its CLI would write.
// The packer's and the workspace's tests range over them.
func CredentialExamples() []string {
	out := slices.Clone(treepolicy.Examples)
	for _, b := range backends {
		for _, c := range b.Credentials {
			out = append(out, treepolicy.Example(c), "home-of-"+b.Name+"/"+treepolicy.Example(c))
		}
	}
	return out
}

// Package layers is the one list of the floors Tether's packages stand
// on, from the mains at the top to the leaves at the bottom, as
// docs/architecture.md draws them. A package imports only packages on
// its own floor or below: a fact a lower floor needs is handed down to
// it (a backend's facts into its executor and packer, the transcript
// readers into the conversation reader), never looked up above it.
// TestImportsPointDown checks every import of every package against the
// list, and that every package stands on exactly one floor; nothing
// links this package.
package layers

import (
	"path"
	"strings"
)

// Floor is one floor of the house: the packages on it, as import paths
// relative to the module, where a segment "*" stands for any one
// segment.
type Floor struct {
	Name     string
	Packages []string
}

// Floors are the floors from the top down.
var Floors = []Floor{
	{"mains and checks", []string{
		"starter", "worker", "internal/*/cmd/*",
		"internal/backend/gen", "internal/backend/gen/folders", "internal/catalogue/gen",
		"internal/e2e", "internal/soak", "internal/visitbench", "internal/layers",
	}},
	{"the CLI and the worker host", []string{
		"internal/cli", "internal/console", "internal/render", "internal/temporalclient",
		"internal/workerhost", "internal/upgradeprobe",
	}},
	{"workflows", []string{"workflows"}},
	{"activities", []string{"activities"}},
	{"the backend registry", []string{"internal/backend"}},
	{"executors", []string{"internal/backend/*", "internal/backend/clitest"}},
	{"cliexec", []string{"internal/backend/cliexec"}},
	{"confinement, the model relay and ask_user", []string{
		"internal/sandbox", "internal/sandbox/sandboxtest", "internal/modelrelay", "internal/askuser",
	}},
	{"packer", []string{"internal/packer", "internal/packer/packertest"}},
	{"conversation", []string{"internal/conversation", "internal/packer/archive"}},
	{"contract, configuration and stores", []string{
		"internal/runapi", "internal/config", "internal/resolve", "internal/workspace",
		"internal/runstore", "internal/blob", "internal/blob/storetest",
		"internal/notify", "internal/notify/notifytest", "internal/telemetry", "internal/egress",
		"internal/github", "internal/github/forge", "internal/github/triggers", "internal/github/webhook",
		"internal/runlist",
	}},
	{"graph", []string{"internal/graph"}},
	{"catalogue", []string{"internal/catalogue", "internal/catalogue/transcripts"}},
	{"facts, sessions, transcript and tree policy", []string{
		"internal/backend/*/facts", "internal/backend/*/session",
		"internal/transcript", "internal/treepolicy", "internal/untrusted",
	}},
	{"agent", []string{"internal/agent"}},
	{"leaves", []string{
		"internal/excerpt", "internal/hostport", "internal/answerlink", "internal/sandbox/mode",
		"internal/sandbox/confine", "internal/blobref", "internal/health", "internal/version",
		"internal/sessionlog", "internal/sessionlog/*", "internal/pki",
		"internal/testenv", "internal/testenv/files", "internal/fakemodel",
		"internal/telemetry/telemetrytest", "internal/treepolicy/treepolicytest",
		"internal/github/githubtest",
	}},
}

// FloorOf returns the floor (its index in Floors, 0 at the top) of the
// package at rel, a path relative to the module, and the pattern that
// placed it there: the one with the fewest wildcards among those that
// match. ok is false when none matches, or two equally specific ones on
// different floors do.
func FloorOf(rel string) (floor int, pattern string, ok bool) {
	best, found, tie := -1, -1, false
	for i, f := range Floors {
		for _, p := range f.Packages {
			if m, _ := path.Match(p, rel); !m {
				continue
			}
			w := strings.Count(p, "*")
			switch {
			case best < 0 || w < best:
				best, found, pattern, tie = w, i, p, false
			case w == best && i != found:
				tie = true
			}
		}
	}
	return found, pattern, found >= 0 && !tie
}

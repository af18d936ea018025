package clitest

import (
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/fakemodel"
)

// BaseURL is where the fake model answers a CLI that speaks wire
// (agent.Facts.Wire): the Messages and Gemini APIs at its root, the
// OpenAI APIs below /v1, as the CLIs' base URL variables take them.
func BaseURL(f *fakemodel.Server, wire string) string { return baseAt(f.URL(), wire) }

// baseAt is the base URL of a CLI that speaks wire for a fake model at
// root.
func baseAt(root, wire string) string {
	switch wire {
	case agent.WireResponses, agent.WireChat:
		return root + "/v1"
	}
	return root
}

// Model is the model the tests give backend name: any name does for the
// fake model.
func Model(name string) string { return "fake-" + strings.ReplaceAll(name, "_", "-") + "-1" }

// FakeVars are the variables (backend.Config.Vars) of every CLI backend
// of the catalogue, pointed at the fake model f: its endpoint for the
// backend's wire, its key and Model. A backend added to the catalogue is
// in every test that runs all of them.
func FakeVars(f *fakemodel.Server) map[string]map[string]string { return VarsAt(f.URL(), f.Key()) }

// VarsAt is FakeVars for a fake model reached at root (a forwarder of it,
// say) that takes key.
func VarsAt(root, key string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, b := range catalogue.All() {
		if !b.Implemented || b.CLI == "" {
			continue
		}
		vs := map[string]string{}
		for _, v := range b.Vars {
			switch v.Role {
			case agent.VarBaseURL:
				vs[v.Name] = baseAt(root, b.Wire)
			case agent.VarAPIKey:
				vs[v.Name] = key
			case agent.VarModel:
				vs[v.Name] = Model(b.Name)
			}
		}
		out[b.Name] = vs
	}
	return out
}

// CLIBackends lists the implemented backends that run a CLI, with
// persist when persist is true, in catalogue order.
func CLIBackends(persist bool) []string {
	var out []string
	for _, b := range catalogue.All() {
		if b.Implemented && b.CLI != "" && (!persist || b.Persist) {
			out = append(out, b.Name)
		}
	}
	return out
}

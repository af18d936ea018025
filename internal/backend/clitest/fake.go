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
func BaseURL(f *fakemodel.Server, wire string) string {
	switch wire {
	case agent.WireResponses, agent.WireChat:
		return f.URL() + "/v1"
	}
	return f.URL()
}

// Model is the model the tests give backend name: any name does for the
// fake model.
func Model(name string) string { return "fake-" + strings.ReplaceAll(name, "_", "-") + "-1" }

// FakeVars are the variables (backend.Config.Vars) of every CLI backend
// of the catalogue, pointed at the fake model f: its endpoint for the
// backend's wire, a fake key and Model. A backend added to the catalogue
// is in every test that runs all of them.
func FakeVars(f *fakemodel.Server) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, b := range catalogue.All() {
		if !b.Implemented || b.CLI == "" {
			continue
		}
		vs := map[string]string{}
		for _, v := range b.Vars {
			switch v.Role {
			case agent.VarBaseURL:
				vs[v.Name] = BaseURL(f, b.Wire)
			case agent.VarAPIKey:
				vs[v.Name] = "k"
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

package clitest

import (
	"testing"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/packer/packertest"
)

// Packer returns backend name's packer for session layout l, bound to an
// env, under the catalogue's session policy and without limits: how a
// backend's layout tests build it.
func Packer(name string, l packer.Layout) func(env agent.Env) *packer.Packer {
	return func(env agent.Env) *packer.Packer {
		return packer.New(name, env, packer.Limits{}, l, packer.WithPolicy(catalogue.SessionPolicy()))
	}
}

// RunLayout runs the session layout suite every backend runs
// (packertest.Run) on backend name's layout l; c says how the CLI seeds a
// session and which of its files are private or foreign.
func RunLayout(t *testing.T, name string, l packer.Layout, c packertest.Layout) {
	c.Backend, c.New = name, Packer(name, l)
	packertest.Run(t, c)
}

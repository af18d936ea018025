package pi

import (
	"testing"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/packer/packertest"
	"github.com/tether-run/tether/internal/testenv/files"
)

func TestLayout(t *testing.T) {
	id := packertest.ID
	packertest.Run(t, packertest.Layout{
		Backend: Name,
		New: func(env agent.Env) *packer.Packer {
			return packer.New(Name, env, packer.Limits{}, layout, packer.WithPolicy(catalogue.SessionPolicy()))
		},
		Seed: func(t testing.TB, env agent.Env, id string) []string {
			name := "2026-11-30T12-27-00-123Z_" + id + ".jsonl"
			files.Write(t, env.StateRoot, name, `{"type":"session","id":"`+id+`","cwd":"/x"}`+"\n")
			files.Write(t, env.StateRoot, id+".jsonl", "not pi's name for it\n")
			return []string{name}
		},
		Private: []string{"auth.json", "models.json", "settings.json"},
		Foreign: map[string]error{
			"sub/2026-11-30T01-02-03-004Z_" + id + ".jsonl": packer.ErrNotWhitelisted,
			id + ".jsonl": packer.ErrNotWhitelisted,
			"2026-11-30T01-02-03-004Z_" + packertest.OtherID + ".jsonl": packer.ErrNotWhitelisted,
			"2026-11-30T01-02-03Z_" + id + ".jsonl":                     packer.ErrNotWhitelisted,
		},
	})
}

package gemini

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
			name := ChatsDir + "/session-2026-12-01T22-57-" + id[:8] + ".jsonl"
			files.Write(t, env.StateRoot, name, `{"sessionId":"`+id+`","projectHash":"x"}`+"\n")
			files.Write(t, env.StateRoot, ".gemini/tmp/"+ProjectSlug+"/logs/session-"+id+".jsonl", "not the session\n")
			return []string{name}
		},
		Private: []string{".gemini/oauth_creds.json", ".gemini/google_accounts.json", ".gemini/settings.json",
			".gemini/projects.json", ".gemini/installation_id", ".gemini/.env"},
		Foreign: map[string]error{
			".gemini/tmp/other/chats/session-2026-12-01T22-57-" + id[:8] + ".jsonl":     packer.ErrNotWhitelisted,
			ChatsDir + "/session-2026-12-01T22-57-" + packertest.OtherID[:8] + ".jsonl": packer.ErrNotWhitelisted,
			ChatsDir + "/" + id + ".jsonl":                                              packer.ErrNotWhitelisted,
			".gemini/tmp/" + ProjectSlug + "/logs/session-" + id + ".jsonl":             packer.ErrNotWhitelisted,
		},
	})
}

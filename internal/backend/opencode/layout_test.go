package opencode

import (
	"testing"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/packer/packertest"
	"github.com/tether-run/tether/internal/testenv/files"
)

func TestLayout(t *testing.T) {
	id := packertest.ID
	clitest.RunLayout(t, Name, layout, packertest.Layout{
		Seed: func(t testing.TB, env agent.Env, id string) []string {
			name := exportName(id)
			files.Write(t, env.StateRoot, name, `{"info":{"id":"`+id+`"},"messages":[]}`+"\n")
			files.Write(t, env.StateRoot, dataDir+"/opencode.db", "SQLite format 3\x00")
			files.Write(t, env.StateRoot, syncedDir+"/"+id, `{"workdir":"/w"}`)
			return []string{name}
		},
		Private: []string{dataDir + "/auth.json", dataDir + "/mcp-auth.json", ".config/opencode/opencode.json",
			dataDir + "/opencode.db", dataDir + "/log/opencode.log", ".config/opencode/package-lock.json"},
		Foreign: map[string]error{
			SessionsDir + "/" + packertest.OtherID + ".json": packer.ErrNotWhitelisted,
			SessionsDir + "/" + id + ".jsonl":                packer.ErrNotWhitelisted,
			"other/" + id + ".json":                          packer.ErrNotWhitelisted,
			syncedDir + "/" + id:                             packer.ErrNotWhitelisted,
		},
	})
}

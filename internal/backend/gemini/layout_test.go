package gemini

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/packer/packertest"
	"github.com/tether-run/tether/internal/testenv/files"
)

// Every working directory is filed under ProjectSlug, whatever the
// registry held before (another machine's path, a slug of its own).
func TestPinProject(t *testing.T) {
	env := agent.Env{StateRoot: t.TempDir(), Workdir: t.TempDir()}
	files.Write(t, env.StateRoot, ".gemini/projects.json", `{"projects":{"/elsewhere":"tether","`+env.Workdir+`":"work"}}`)
	require.NoError(t, pinProject(env))
	var reg struct{ Projects map[string]string }
	b, err := os.ReadFile(filepath.Join(env.StateRoot, ".gemini", "projects.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &reg))
	wd, _ := filepath.EvalSymlinks(env.Workdir)
	assert.Equal(t, map[string]string{wd: ProjectSlug}, reg.Projects)
	for _, base := range []string{"tmp", "history"} {
		b, err := os.ReadFile(filepath.Join(env.StateRoot, ".gemini", base, ProjectSlug, ".project_root"))
		require.NoError(t, err)
		assert.Equal(t, wd, string(b))
	}
}

// A fork is a copy under a new id, found by the packer under that id, and
// the original is left as it was.
func TestFork(t *testing.T) {
	env := agent.Env{StateRoot: t.TempDir(), Workdir: t.TempDir()}
	const id = "05f37cc2-fc93-4d73-92dc-d48ff34b42e7"
	orig := ChatsDir + "/session-2026-12-01T22-57-05f37cc2.jsonl"
	body := `{"sessionId":"` + id + `","projectHash":"h","kind":"main"}` + "\n" +
		`{"id":"m1","type":"user","content":[{"text":"alpha"}]}` + "\n" +
		`{"$set":{"sessionId":"` + id + `"}}` + "\n"
	files.Write(t, env.StateRoot, orig, body)
	p := packer.New(Name, env, packer.DefaultLimits(), layout)
	file, err := p.SessionFile(t.Context(), id)
	require.NoError(t, err)

	newID, err := fork(env.StateRoot, file)
	require.NoError(t, err)
	assert.NotEqual(t, id, newID)
	copyFile, err := p.SessionFile(t.Context(), newID)
	require.NoError(t, err, "the fork is where the packer and the CLI look")
	got, err := sessionIDOf(env.StateRoot, copyFile)
	require.NoError(t, err)
	assert.Equal(t, newID, got)
	b, err := os.ReadFile(copyFile)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	assert.Equal(t, `{"id":"m1","type":"user","content":[{"text":"alpha"}]}`, lines[1], "the messages are copied as they were")
	assert.Equal(t, `{"$set":{"sessionId":"`+newID+`"}}`, lines[len(lines)-1], "the last metadata update names the fork")
	o, err := os.ReadFile(filepath.Join(env.StateRoot, orig))
	require.NoError(t, err)
	assert.Equal(t, body, string(o))
}

func TestLayout(t *testing.T) {
	id := packertest.ID
	clitest.RunLayout(t, Name, layout, packertest.Layout{
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

package pi

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

func TestAdoptWorkdirRewritesOnlyTheHeader(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.jsonl")
	body := `{"type":"message","text":"cwd /old"}` + "\n"
	require.NoError(t, os.WriteFile(file, []byte(`{"type":"session","id":"x","cwd":"/old"}`+"\n"+body), 0o600))
	require.NoError(t, adoptWorkdir(filepath.Dir(file), file, "/new dir"))
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, `{"cwd":"/new dir","id":"x","type":"session"}`+"\n"+body, string(b))
	st, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	before, _ := os.Stat(file)
	require.NoError(t, adoptWorkdir(filepath.Dir(file), file, "/new dir"), "already there: nothing to do")
	after, _ := os.Stat(file)
	assert.Equal(t, before.ModTime(), after.ModTime())

	other := filepath.Join(t.TempDir(), "o.jsonl")
	require.NoError(t, os.WriteFile(other, []byte("not json\n"), 0o600))
	require.NoError(t, adoptWorkdir(filepath.Dir(other), other, "/x"))
	b, _ = os.ReadFile(other)
	assert.Equal(t, "not json\n", string(b))
}

// A session file the agent swapped for a link (to a secret, to /dev/zero)
// or a FIFO is refused with the typed error, at once: never read, never
// waited on.
func TestAdoptWorkdirRefusesWhatIsNotASessionFile(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "credentials")
	require.NoError(t, os.WriteFile(secret, []byte(`{"type":"session","cwd":"aws_secret"}`+"\n"), 0o600))
	for name, plant := range map[string]func(string) error{
		"link to a secret":  func(p string) error { return os.Symlink(secret, p) },
		"link to /dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"fifo":              func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"directory":         func(p string) error { return os.Mkdir(p, 0o700) },
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			file := filepath.Join(root, "2026-12-01T00-00-00-000Z_x.jsonl")
			require.NoError(t, plant(file))
			err := adoptWorkdir(root, file, "/w")
			require.ErrorIs(t, err, agent.ErrUnsafeFile)
			assert.NotContains(t, err.Error(), "aws_secret")
			b, _ := os.ReadFile(secret)
			assert.Contains(t, string(b), `"cwd":"aws_secret"`, "the link's target is untouched")
		})
	}
}

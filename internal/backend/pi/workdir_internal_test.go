package pi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAdoptWorkdirRewritesOnlyTheHeader(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.jsonl")
	body := `{"type":"message","text":"cwd /old"}` + "\n"
	require.NoError(t, os.WriteFile(file, []byte(`{"type":"session","id":"x","cwd":"/old"}`+"\n"+body), 0o600))
	require.NoError(t, adoptWorkdir(file, "/new dir"))
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, `{"cwd":"/new dir","id":"x","type":"session"}`+"\n"+body, string(b))
	st, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	before, _ := os.Stat(file)
	require.NoError(t, adoptWorkdir(file, "/new dir"), "already there: nothing to do")
	after, _ := os.Stat(file)
	assert.Equal(t, before.ModTime(), after.ModTime())

	other := filepath.Join(t.TempDir(), "o.jsonl")
	require.NoError(t, os.WriteFile(other, []byte("not json\n"), 0o600))
	require.NoError(t, adoptWorkdir(other, "/x"))
	b, _ = os.ReadFile(other)
	assert.Equal(t, "not json\n", string(b))
}

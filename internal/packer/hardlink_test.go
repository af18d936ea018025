package packer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tether-run/tether/internal/testenv/files"
)

// A session file that is a hard link to a credential file would carry the
// credential under an innocent name. Pack refuses any regular file with
// more than one link, as the main file and inside session folders, for
// every backend, and the credential reaches no archive.
func TestPackRefusesHardLinks(t *testing.T) {
	const secret = "sk-ant-oat01-the-oauth-token"
	link := func(t *testing.T, root, target, at string) {
		t.Helper()
		files.Write(t, root, target, secret)
		p := filepath.Join(root, filepath.FromSlash(at))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if err := os.Remove(p); !os.IsNotExist(err) {
			require.NoError(t, err)
		}
		require.NoError(t, os.Link(filepath.Join(root, filepath.FromSlash(target)), p))
	}
	claude := func(t *testing.T, target, at func(slug string) string, mainFile bool) {
		env := testEnv(t, "x")
		slug := seedSession(t, env, testID)
		files.Write(t, env.StateRoot, at(slug), "placeholder")
		link(t, env.StateRoot, target(slug), at(slug))
		p := newTestPacker(env, Limits{})
		blob, err := p.PackSession(ctx, testID)
		require.ErrorIs(t, err, ErrHardLink)
		require.ErrorIs(t, err, ErrLinkEntry)
		assert.Nil(t, blob)
		assert.NotContains(t, err.Error(), secret)
		if mainFile {
			assert.False(t, p.HasSession(ctx, testID), "a hard-linked main file could not be packed, so HasSession does not report it")
		}
	}
	t.Run("claude transcript linked to .credentials.json", func(t *testing.T) {
		claude(t, func(string) string { return ".credentials.json" },
			func(slug string) string { return "projects/" + slug + "/" + testID + ".jsonl" }, true)
	})
	t.Run("claude subagent file linked to .credentials.json", func(t *testing.T) {
		claude(t, func(string) string { return ".credentials.json" },
			func(slug string) string { return "projects/" + slug + "/" + testID + "/subagents/agent-a1.jsonl" }, false)
	})
	t.Run("claude task file linked to a file outside the session", func(t *testing.T) {
		claude(t, func(slug string) string { return "projects/" + slug + "/" + otherID + ".jsonl" },
			func(string) string { return "tasks/" + testID + "/1.json" }, false)
	})
}

// Inside session folders, credential-shaped names are denied by pattern,
// not only by exact name, whatever their case: they are left out of the
// archive, and an archive holding one is refused.
func TestDenyPatterns(t *testing.T) {
	names := []string{
		".env", "prod.env", "STAGING.ENV",
		"id_rsa", "id_rsa.pub", "id_ecdsa", "id_ed25519", "ID_ED25519.old",
		"server.pem", "tls.key", "Private.KEY",
		".credentials.json.bak", "auth.json.old", "models.json~", "AUTH.JSON.1",
		"settings.local.json", "settings-prod.json", "Settings.JSON",
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			env := testEnv(t, "x")
			slug := seedSession(t, env, testID)
			for _, dir := range []string{"projects/" + slug + "/" + testID + "/", "projects/" + slug + "/" + testID + "/subagents/", "tasks/" + testID + "/"} {
				files.Write(t, env.StateRoot, dir+name, "secret-value")
			}
			blob, err := newTestPacker(env, Limits{}).PackSession(ctx, testID)
			require.NoError(t, err)
			assert.NotContains(t, string(decompressed(t, blob)), "secret-value")
			for _, n := range entryNames(t, blob) {
				assert.NotEqual(t, name, filepath.Base(n))
			}

			target := testEnv(t, "y")
			err = newTestPacker(target, Limits{}).UnpackSession(ctx, testID, craft(t, testBackend, testID, file("project/"+testID+".jsonl", "{}"), file("tasks/"+testID+"/"+name, "secret-value")))
			assert.ErrorIs(t, err, ErrDenied)
			assert.Empty(t, files.List(t, target.StateRoot))
		})
	}
	for _, ok := range []string{"agent-a1.jsonl", "environment.md", "keys.txt", "notes.pem.md", "my-settings.jsonl", "1.json"} {
		assert.False(t, denied("tasks/"+testID+"/"+ok), ok)
	}
}

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// What go generate ./internal/backend writes is what the repository
// holds: the catalogue registers exactly the folders of internal/backend.
func TestEntriesAreCurrent(t *testing.T) {
	root := testenv.Root()
	want, err := Generate(root)
	require.NoError(t, err)
	require.Len(t, want, 2)
	for name, src := range want {
		have, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		assert.Equal(t, string(src), string(have), "%s is out of date: run go generate ./internal/backend", name)
	}
}

// A new backend is its folder and its pin: the generator finds it, puts
// it where its pin stands in .env, imports its transcript reader when its
// session package has one, and refuses a pin .env does not set or a name
// two folders declare.
func TestANewFolderRegistersItself(t *testing.T) {
	root := t.TempDir()
	facts := func(dir, name, pin string) {
		p := filepath.Join(root, "internal", "backend", dir, "facts")
		require.NoError(t, os.MkdirAll(p, 0o755))
		src := "package facts\n\nconst Name = \"" + name + "\"\n\nvar Backend = agent.Facts{Name: Name"
		if pin != "" {
			src += ", Pin: \"" + pin + "\""
		}
		require.NoError(t, os.WriteFile(filepath.Join(p, "facts.go"), []byte(src+"}\n"), 0o644))
	}
	env := func(s string) { require.NoError(t, os.WriteFile(filepath.Join(root, ".env"), []byte(s), 0o644)) }
	facts("zeta", "zeta_cli", "AGENT_CLI_ZETA")
	facts("alpha", "alpha_cli", "AGENT_CLI_ALPHA")
	facts("builtin", "builtin", "")
	// A folder of shared code is not a backend.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "internal", "backend", "cliexec"), 0o755))
	ses := filepath.Join(root, "internal", "backend", "zeta", "session")
	require.NoError(t, os.MkdirAll(ses, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ses, "session.go"), []byte("package session\n\nvar Transcript = transcript.Reader{}\n"), 0o644))
	env("# pins\nAGENT_CLI_ZETA=zeta@1\nOTHER=1\nAGENT_CLI_ALPHA=alpha@2\n")

	out, err := Generate(root)
	require.NoError(t, err)
	src, readers := string(out[Output]), string(out[ReadersOutput])
	assert.Regexp(t, `(?s)builtinfacts\.Backend,\s*zetafacts\.Backend,\s*alphafacts\.Backend,`, src)
	assert.NotContains(t, src, "session", "the facts link no reader")
	assert.Contains(t, readers, `zetasession "github.com/tether-run/tether/internal/backend/zeta/session"`)
	assert.Regexp(t, `zetafacts\.Name:\s*&zetasession\.Transcript,`, readers)
	assert.NotContains(t, readers, "alpha", "a backend without a session has no reader")
	assert.NotContains(t, src+readers, "cliexec")

	env("AGENT_CLI_ZETA=zeta@1\n")
	_, err = Generate(root)
	require.ErrorContains(t, err, "backend alpha_cli (internal/backend/alpha) is pinned by AGENT_CLI_ALPHA, which .env does not set")

	env("AGENT_CLI_ZETA=zeta@1\nAGENT_CLI_ALPHA=alpha@2\n")
	facts("alpha2", "alpha_cli", "AGENT_CLI_ALPHA")
	_, err = Generate(root)
	require.ErrorContains(t, err, "both declare backend alpha_cli")
}

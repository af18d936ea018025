package scripted

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

// packedSession runs one visit and returns its id, the env and the packed blob.
func packedSession(t *testing.T) (string, agent.Env, []byte) {
	t.Helper()
	b := New(Options{})
	e := env(t)
	res := run(t, b, agent.Request{Prompt: "p", Env: e})
	blob, err := b.Packer(e).PackSession(ctx, res.SessionID)
	require.NoError(t, err)
	return res.SessionID, e, blob
}

func logPath(e agent.Env, cwd, id string) string {
	return filepath.Join(SessionsDir(e.StateRoot), jsonl.RelPath(cwd, id))
}

func readLog(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	return data
}

// regularFiles lists the regular files under root.
func regularFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}))
	return out
}

func TestPackUnpackRoundTrip(t *testing.T) {
	id, e, blob := packedSession(t)
	b := New(Options{})
	again, err := b.Packer(e).PackSession(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, blob, again, "packing is deterministic")
	h, err := packer.ReadHeader(blob)
	require.NoError(t, err)
	assert.Equal(t, Name, h.Backend)
	assert.Equal(t, id, h.SessionID)
	src := readLog(t, logPath(e, e.Workdir, id))

	dst := agent.Env{StateRoot: filepath.Join(t.TempDir(), "fresh"), Workdir: "/elsewhere"}
	p := b.Packer(dst)
	assert.False(t, p.HasSession(ctx, id))
	require.NoError(t, p.UnpackSession(ctx, id, blob))
	assert.True(t, p.HasSession(ctx, id))
	assert.Equal(t, src, readLog(t, logPath(dst, dst.Workdir, id)), "a root without the session gets it under its own workdir's bucket")
	require.NoError(t, p.UnpackSession(ctx, id, blob), "unpacking twice is harmless")
	assert.Equal(t, []string{logPath(dst, dst.Workdir, id)}, regularFiles(t, dst.StateRoot))

	res := run(t, b, agent.Request{Prompt: "q", SessionID: id, Env: dst})
	assert.Equal(t, "turn 2: q", res.Text)
	assert.Equal(t, []string{logPath(dst, e.Workdir, id)}, regularFiles(t, dst.StateRoot),
		"the resume filed the log under its header's bucket")
	assert.True(t, p.HasSession(ctx, id))

	// Restoring the older archive over the newer live file rolls it back,
	// in the bucket that holds it.
	require.NoError(t, p.UnpackSession(ctx, id, blob))
	assert.Equal(t, []string{logPath(dst, e.Workdir, id)}, regularFiles(t, dst.StateRoot))
	assert.Equal(t, src, readLog(t, logPath(dst, e.Workdir, id)))
	res = run(t, b, agent.Request{Prompt: "r", SessionID: id, Env: dst})
	assert.Equal(t, "turn 2: r", res.Text)

	// The moved session moves on again.
	moved, err := p.PackSession(ctx, id)
	require.NoError(t, err)
	third := agent.Env{StateRoot: t.TempDir(), Workdir: "/third"}
	require.NoError(t, b.Packer(third).UnpackSession(ctx, id, moved))
	res = run(t, b, agent.Request{Prompt: "s", SessionID: id, Env: third})
	assert.Equal(t, "turn 3: s", res.Text)
}

func TestPackMissingIsAnError(t *testing.T) {
	p := New(Options{}).Packer(env(t))
	_, err := p.PackSession(ctx, "sc-missing")
	require.ErrorIs(t, err, packer.ErrNoSession)
	assert.False(t, p.HasSession(ctx, "sc-missing"))
	_, err = p.PackSession(ctx, "../x")
	require.ErrorIs(t, err, packer.ErrUnsafePath)
	assert.False(t, p.HasSession(ctx, "../x"))
}

func TestUnpackRefusesForeignAndCorruptArchives(t *testing.T) {
	id, e, blob := packedSession(t)
	b := New(Options{})
	other := run(t, b, agent.Request{Prompt: "other", Env: e}).SessionID
	otherBlob, err := b.Packer(e).PackSession(ctx, other)
	require.NoError(t, err)
	claude, err := packer.New("claude_code", e, packer.DefaultLimits(), packer.Files(places)).PackSession(ctx, id)
	require.NoError(t, err)
	// An archive that says it holds id but carries another session's log.
	smuggled, err := packer.New(Name, e, packer.DefaultLimits(), packer.Files(func(env agent.Env, _ string) ([]packer.Place, error) {
		return places(env, other)
	})).PackSession(ctx, id)
	require.NoError(t, err)

	cases := []struct {
		name string
		blob []byte
		want error
	}{
		{"another session", otherBlob, packer.ErrHeaderMismatch},
		{"another backend", claude, packer.ErrHeaderMismatch},
		{"another session's log", smuggled, packer.ErrNotWhitelisted},
		{"truncated", blob[:len(blob)/2], packer.ErrCorrupt},
		{"not an archive", []byte("hello"), packer.ErrCorrupt},
		{"empty", nil, packer.ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := agent.Env{StateRoot: t.TempDir(), Workdir: "/w"}
			p := b.Packer(dst)
			require.ErrorIs(t, p.UnpackSession(ctx, id, c.blob), c.want)
			assert.Empty(t, regularFiles(t, dst.StateRoot), "a refused archive writes nothing")
			assert.False(t, p.HasSession(ctx, id))
		})
	}
}

func TestUnpackRefusesSymlinkedDirectories(t *testing.T) {
	id, _, blob := packedSession(t)
	outside := t.TempDir()
	dst := t.TempDir()
	require.NoError(t, os.Symlink(outside, SessionsDir(dst)))
	err := New(Options{}).Packer(agent.Env{StateRoot: dst}).UnpackSession(ctx, id, blob)
	require.ErrorIs(t, err, packer.ErrExists)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written through the link")
}

// Two copies of one session are the session log's error too: the packer
// neither guesses which is current nor ships one of them.
func TestTwoCopiesOfASessionAreRefused(t *testing.T) {
	id, e, blob := packedSession(t)
	stale := logPath(e, "/old", id)
	require.NoError(t, os.MkdirAll(filepath.Dir(stale), 0o700))
	require.NoError(t, os.WriteFile(stale, []byte("stale"), 0o600))
	p := New(Options{}).Packer(e)
	assert.False(t, p.HasSession(ctx, id))
	_, err := p.PackSession(ctx, id)
	require.ErrorContains(t, err, "remove the stale copy")
	require.ErrorContains(t, p.UnpackSession(ctx, id, blob), "remove the stale copy")
}

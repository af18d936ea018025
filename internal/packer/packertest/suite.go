package packertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/testenv/files"
)

// Session ids the suite uses.
const (
	ID      = "0b6f2c1e-4d4b-4a59-9a3e-1f2e3d4c5b6a"
	OtherID = "7c1d0e9f-2a3b-4c5d-8e9f-0a1b2c3d4e5f"
)

// Layout describes one backend's session layout to Run.
type Layout struct {
	// Backend is the backend name its archives carry.
	Backend string
	// New returns the backend's packer bound to env.
	New func(env agent.Env) *packer.Packer
	// Seed writes session id into env as the CLI would and returns the
	// files it wrote, relative to the state root.
	Seed func(t testing.TB, env agent.Env, id string) []string
	// Private are files the CLI keeps in its state root beside the
	// sessions (credentials, settings, databases), relative to it; none
	// may ever travel with a session.
	Private []string
	// Foreign are archive entry names the layout must refuse in an
	// archive of session ID, each with the error it must wrap; each is
	// crafted beside the session's own main file.
	Foreign map[string]error
}

// Run checks that l round-trips a session between two machines' roots and
// working directories and nothing else, refuses foreign names, and that a
// session file hard-linked to a private file is never packed.
func Run(t *testing.T, l Layout) {
	ctx := context.Background()
	env := func(t *testing.T, name string) agent.Env {
		base := t.TempDir()
		e := agent.Env{StateRoot: filepath.Join(base, "state"), Workdir: filepath.Join(base, "work", name)}
		require.NoError(t, os.MkdirAll(e.Workdir, 0o755))
		return e
	}
	// mainFile is the session's main file in env, relative to its root.
	mainFile := func(t *testing.T, p *packer.Packer, e agent.Env) string {
		f, err := p.SessionFile(ctx, ID)
		require.NoError(t, err)
		rel, err := filepath.Rel(e.StateRoot, f)
		require.NoError(t, err)
		return filepath.ToSlash(rel)
	}
	t.Run("RoundTrip", func(t *testing.T) {
		a, b := env(t, "x"), env(t, "y")
		seeded := l.Seed(t, a, ID)
		l.Seed(t, a, OtherID)
		for _, f := range l.Private {
			files.Write(t, a.StateRoot, f, "private")
		}
		pa, pb := l.New(a), l.New(b)
		require.True(t, pa.HasSession(ctx, ID))
		blob, err := pa.PackSession(ctx, ID)
		require.NoError(t, err)
		assert.NotContains(t, string(blob), "private")

		assert.False(t, pb.HasSession(ctx, ID))
		require.NoError(t, pb.UnpackSession(ctx, ID, blob))
		assert.True(t, pb.HasSession(ctx, ID))
		assert.False(t, pb.HasSession(ctx, OtherID))
		assert.Len(t, files.List(t, b.StateRoot), len(seeded), "the session's files and nothing else: %v", files.List(t, b.StateRoot))
		assert.Equal(t, files.Read(t, a.StateRoot, mainFile(t, pa, a)), files.Read(t, b.StateRoot, mainFile(t, pb, b)))

		// A retried restore unpacks the same blob again.
		require.NoError(t, pb.UnpackSession(ctx, ID, blob))
		assert.Len(t, files.List(t, b.StateRoot), len(seeded))
	})
	t.Run("Incremental", func(t *testing.T) {
		// A slot of a base and two deltas, restored on two other machines:
		// the session's main file grows by a turn, then a compaction
		// rewrites it shorter, as the CLIs do.
		a := env(t, "x")
		seeded := l.Seed(t, a, ID)
		for _, f := range l.Private {
			files.Write(t, a.StateRoot, f, "private")
		}
		pa := l.New(a)
		main := mainFile(t, pa, a)
		base, m0, err := pa.PackDelta(ctx, ID, nil)
		require.NoError(t, err)
		grown := files.Read(t, a.StateRoot, main) + `{"type":"user","text":"one more turn"}` + "\n"
		files.Write(t, a.StateRoot, main, grown)
		d1, m1, err := pa.PackDelta(ctx, ID, m0)
		require.NoError(t, err)
		h, err := packer.ReadHeader(d1)
		require.NoError(t, err)
		assert.Equal(t, packer.KindDelta, h.Kind)
		files.Write(t, a.StateRoot, main, `{"type":"summary","text":"compacted"}`+"\n")
		d2, m2, err := pa.PackDelta(ctx, ID, m1)
		require.NoError(t, err)
		for _, blob := range [][]byte{base, d1, d2} {
			assert.NotContains(t, string(blob), "private")
		}
		for i, want := range []*packer.Manifest{m0, m1, m2} {
			b := env(t, "y")
			pb := l.New(b)
			m, err := pb.UnpackParts(ctx, ID, [][]byte{base, d1, d2}[:i+1]...)
			require.NoError(t, err)
			assert.Equal(t, want, m)
			assert.True(t, pb.HasSession(ctx, ID))
			assert.Len(t, files.List(t, b.StateRoot), len(seeded), "the session's files and nothing else: %v", files.List(t, b.StateRoot))
			if i == 2 {
				assert.Equal(t, `{"type":"summary","text":"compacted"}`+"\n", files.Read(t, b.StateRoot, mainFile(t, pb, b)))
			}
		}
	})
	t.Run("ForeignNames", func(t *testing.T) {
		src := env(t, "x")
		l.Seed(t, src, ID)
		main := mainFile(t, l.New(src), src)
		for name, want := range l.Foreign {
			t.Run(name, func(t *testing.T) {
				dst := env(t, "y")
				blob := Craft(t, l.Backend, ID, File{main, "{}\n"}, File{name, "x"})
				err := l.New(dst).UnpackSession(ctx, ID, blob)
				assert.ErrorIs(t, err, want)
				assert.Empty(t, files.List(t, dst.StateRoot))
			})
		}
	})
	t.Run("HardLinkToAPrivateFile", func(t *testing.T) {
		const secret = "sk-ant-oat01-the-oauth-token"
		for _, private := range l.Private {
			t.Run(private, func(t *testing.T) {
				e := env(t, "x")
				l.Seed(t, e, ID)
				p := l.New(e)
				main := filepath.Join(e.StateRoot, filepath.FromSlash(mainFile(t, p, e)))
				files.Write(t, e.StateRoot, private, secret)
				require.NoError(t, os.Remove(main))
				require.NoError(t, os.Link(filepath.Join(e.StateRoot, filepath.FromSlash(private)), main))
				_, err := p.PackSession(ctx, ID)
				require.ErrorIs(t, err, packer.ErrHardLink)
				assert.NotContains(t, err.Error(), secret)
				assert.False(t, p.HasSession(ctx, ID), "a hard-linked main file is no session")
			})
		}
	})
}

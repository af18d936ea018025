package claude

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/packer/packertest"
	"github.com/tether-run/tether/internal/testenv/files"
)

// testPacker is the backend's packer as its layout tests build it.
var testPacker = clitest.Packer(Name, sessionLayout)

// slugOf is the project folder of env's working directory.
func slugOf(t testing.TB, env agent.Env) string {
	dir, err := workdirOf(env.Workdir)
	require.NoError(t, err)
	return projectSlug(dir)
}

// seed writes a session as Claude Code does (transcript, subagents, tool
// results, tasks) and returns its files.
func seed(t testing.TB, env agent.Env, id string) []string {
	proj := "projects/" + slugOf(t, env) + "/"
	session := []string{
		proj + id + ".jsonl",
		proj + id + "/subagents/agent-a1.jsonl",
		proj + id + "/tool-results/r1.txt",
		"tasks/" + id + "/1.json",
	}
	for _, f := range session {
		files.Write(t, env.StateRoot, f, `{"session":"`+id+`","cwd":"`+env.Workdir+`"}`+"\n")
	}
	files.Write(t, env.StateRoot, proj+"memory/MEMORY.md", "memory\n")
	return session
}

func TestLayout(t *testing.T) {
	id := packertest.ID
	clitest.RunLayout(t, Name, sessionLayout, packertest.Layout{
		Seed:    seed,
		Private: []string{".credentials.json", ".claude.json", "settings.json", "backups/.claude.json.backup.1", "projects/-x/" + id + "/.credentials.json"},
		Foreign: map[string]error{
			"project/" + packertest.OtherID + ".jsonl": packer.ErrNotWhitelisted,
			"projects/-x/" + id + ".jsonl":             packer.ErrNotWhitelisted,
			"project/memory/MEMORY.md":                 packer.ErrNotWhitelisted,
			"tasks/" + packertest.OtherID + "/1.json":  packer.ErrNotWhitelisted,
			"todos/" + id + ".json":                    packer.ErrNotWhitelisted,
		},
	})
}

// An unpack places the session under the project folder of the target's
// working directory, as Claude Code sees it (symlinks resolved), and the
// archive records where it was packed.
func TestUnpackMovesTheSessionToTheTargetsProject(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	a := agent.Env{StateRoot: filepath.Join(base, "a"), Workdir: filepath.Join(base, "x")}
	require.NoError(t, os.MkdirAll(filepath.Join(base, "real-y"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(base, "real-y"), filepath.Join(base, "y")))
	b := agent.Env{StateRoot: filepath.Join(base, "b"), Workdir: filepath.Join(base, "y")}
	session := seed(t, a, packertest.ID)
	blob, err := testPacker(a).PackSession(ctx, packertest.ID)
	require.NoError(t, err)
	h, err := packer.ReadHeader(blob)
	require.NoError(t, err)
	wd, err := workdirOf(a.Workdir)
	require.NoError(t, err)
	assert.Equal(t, wd, h.SourceWorkdir)

	require.NoError(t, testPacker(b).UnpackSession(ctx, packertest.ID, blob))
	slugA, slugB := slugOf(t, a), slugOf(t, b)
	require.NotEqual(t, slugA, slugB)
	assert.Contains(t, slugB, "real-y", "the slug is of the resolved working directory")
	var want []string
	for _, f := range session {
		rel, _ := filepath.Rel("projects/"+slugA, f)
		if !filepath.IsLocal(rel) {
			want = append(want, f)
			continue
		}
		want = append(want, "projects/"+slugB+"/"+filepath.ToSlash(rel))
	}
	assert.ElementsMatch(t, want, files.List(t, b.StateRoot))
	// The same root seen from another working directory has no session.
	assert.False(t, testPacker(agent.Env{StateRoot: b.StateRoot, Workdir: a.Workdir}).HasSession(ctx, packertest.ID))
}

// A session id that is one of Claude Code's own names in the project
// folder would pack (and, unpacked, replace) that folder: memory/ holds the
// user's memory. Such ids are refused.
func TestRefusesReservedIDs(t *testing.T) {
	ctx := context.Background()
	env := agent.Env{StateRoot: filepath.Join(t.TempDir(), "state"), Workdir: t.TempDir()}
	seed(t, env, packertest.ID)
	slug := slugOf(t, env)
	files.Write(t, env.StateRoot, "projects/"+slug+"/memory.jsonl", "{}\n")
	p := testPacker(env)
	for _, id := range []string{"memory", "Memory", "memory.", "tiny_memory", "bagel", "cloud-snapshots", "connector-downloads", "bridge-pointer.json", "x.jsonl", "1764000000000.cast", "x.ccr-tip.json", "x.precompact.json", "x.dir-sync.json"} {
		_, err := p.PackSession(ctx, id)
		assert.ErrorIs(t, err, packer.ErrReservedID, id)
		assert.ErrorIs(t, err, packer.ErrUnsafePath, id)
		assert.False(t, p.HasSession(ctx, id), id)
		dst := agent.Env{StateRoot: t.TempDir(), Workdir: env.Workdir}
		blob := packertest.Craft(t, Name, id, packertest.File{Name: "project/" + id + ".jsonl", Body: "{}"}, packertest.File{Name: "project/" + id + "/MEMORY.md", Body: "evil"})
		assert.ErrorIs(t, testPacker(dst).UnpackSession(ctx, id, blob), packer.ErrReservedID, id)
	}
	assert.Equal(t, "memory\n", files.Read(t, env.StateRoot, "projects/"+slug+"/memory/MEMORY.md"))
}

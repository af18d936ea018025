package packer

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/testenv/files"
)

var ctx = context.Background()

// seedSession writes a session and unrelated state into env's root.
func seedSession(t *testing.T, env agent.Env, id string) string {
	slug := slugOf(t, env)
	r := env.StateRoot
	files.Write(t, r, "projects/"+slug+"/"+id+".jsonl", `{"type":"user","cwd":"`+env.Workdir+`"}`+"\n")
	files.Write(t, r, "projects/"+slug+"/"+id+"/subagents/agent-a1.jsonl", "sub\n")
	files.Write(t, r, "projects/"+slug+"/"+id+"/tool-results/r1.txt", "result\n")
	require.NoError(t, os.MkdirAll(filepath.Join(r, "projects", slug, id, "empty"), 0o755))
	files.Write(t, r, "tasks/"+id+"/1.json", `{"task":1}`)
	// Not part of the session.
	files.Write(t, r, "projects/"+slug+"/"+otherID+".jsonl", "other\n")
	files.Write(t, r, "projects/"+slug+"/memory/MEMORY.md", "memory\n")
	files.Write(t, r, "tasks/"+otherID+"/1.json", "other task\n")
	files.Write(t, r, ".credentials.json", "secret")
	files.Write(t, r, ".claude.json", "{}")
	files.Write(t, r, "settings.json", "{}")
	files.Write(t, r, "backups/.claude.json.backup.1", "{}")
	return slug
}

func TestRoundTripMovesSlug(t *testing.T) {
	a := testEnv(t, "x")
	slugA := seedSession(t, a, testID)
	pa := newTestPacker(a, Limits{})
	require.True(t, pa.HasSession(ctx, testID))

	blob, err := pa.PackSession(ctx, testID)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		"project/" + testID + "/",
		"project/" + testID + "/empty/",
		"project/" + testID + "/subagents/",
		"project/" + testID + "/subagents/agent-a1.jsonl",
		"project/" + testID + "/tool-results/",
		"project/" + testID + "/tool-results/r1.txt",
		"project/" + testID + ".jsonl",
		"tasks/" + testID + "/",
		"tasks/" + testID + "/1.json",
	}, entryNames(t, blob))
	h, err := ReadHeader(blob)
	require.NoError(t, err)
	assert.Equal(t, Header{Backend: testBackend, SessionID: testID, SourceWorkdir: a.Workdir, CreatedBy: createdBy()}, h)

	again, err := pa.PackSession(ctx, testID)
	require.NoError(t, err)
	assert.Equal(t, Digest(blob), Digest(again), "packing is deterministic")

	b := testEnv(t, "y")
	pb := newTestPacker(b, Limits{})
	assert.False(t, pb.HasSession(ctx, testID))
	require.NoError(t, pb.UnpackSession(ctx, testID, blob))
	assert.True(t, pb.HasSession(ctx, testID))

	slugB := slugOf(t, b)
	require.NotEqual(t, slugA, slugB)
	assert.ElementsMatch(t, []string{
		"projects/",
		"projects/" + slugB + "/",
		"projects/" + slugB + "/" + testID + "/",
		"projects/" + slugB + "/" + testID + "/empty/",
		"projects/" + slugB + "/" + testID + "/subagents/",
		"projects/" + slugB + "/" + testID + "/subagents/agent-a1.jsonl",
		"projects/" + slugB + "/" + testID + "/tool-results/",
		"projects/" + slugB + "/" + testID + "/tool-results/r1.txt",
		"projects/" + slugB + "/" + testID + ".jsonl",
		"tasks/",
		"tasks/" + testID + "/",
		"tasks/" + testID + "/1.json",
	}, files.Tree(t, b.StateRoot))
	for _, rel := range []string{testID + ".jsonl", testID + "/subagents/agent-a1.jsonl"} {
		assert.Equal(t, files.Read(t, a.StateRoot, "projects/"+slugA+"/"+rel), files.Read(t, b.StateRoot, "projects/"+slugB+"/"+rel))
	}
	fi, err := os.Stat(filepath.Join(b.StateRoot, "projects", slugB, testID+".jsonl"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// The same packer bound to another working directory does not see it.
	assert.False(t, newTestPacker(agent.Env{StateRoot: b.StateRoot, Workdir: a.Workdir}, Limits{}).HasSession(ctx, testID))

	// Repacking from B gives the same files under the logical names.
	blobB, err := pb.PackSession(ctx, testID)
	require.NoError(t, err)
	assert.Equal(t, entryNames(t, blob), entryNames(t, blobB))
}

func TestUnpackIsIdempotentAndReplacesStaleCopies(t *testing.T) {
	a := testEnv(t, "x")
	seedSession(t, a, testID)
	blob, err := newTestPacker(a, Limits{}).PackSession(ctx, testID)
	require.NoError(t, err)

	b := testEnv(t, "y")
	pb := newTestPacker(b, Limits{})
	require.NoError(t, pb.UnpackSession(ctx, testID, blob))
	want := files.Tree(t, b.StateRoot)
	slug := slugOf(t, b)

	// A retried activity unpacks the same blob again.
	require.NoError(t, pb.UnpackSession(ctx, testID, blob))
	assert.Equal(t, want, files.Tree(t, b.StateRoot))

	// The live copy moved on (a later visit), then a rewind restores the
	// older blob: the archive wins, extra parts go away, others stay.
	transcript := "projects/" + slug + "/" + testID + ".jsonl"
	old := files.Read(t, b.StateRoot, transcript)
	files.Write(t, b.StateRoot, transcript, old+`{"later":true}`+"\n")
	files.Write(t, b.StateRoot, "projects/"+slug+"/"+testID+"/subagents/agent-later.jsonl", "later\n")
	files.Write(t, b.StateRoot, "projects/"+slug+"/"+otherID+".jsonl", "unrelated\n")
	require.NoError(t, pb.UnpackSession(ctx, testID, blob))
	assert.Equal(t, old, files.Read(t, b.StateRoot, transcript))
	assert.NoFileExists(t, filepath.Join(b.StateRoot, "projects", slug, testID, "subagents", "agent-later.jsonl"))
	assert.Equal(t, "unrelated\n", files.Read(t, b.StateRoot, "projects/"+slug+"/"+otherID+".jsonl"))

	// A session part the archive lacks is removed.
	require.NoError(t, os.RemoveAll(filepath.Join(a.StateRoot, "tasks", testID)))
	noTasks, err := newTestPacker(a, Limits{}).PackSession(ctx, testID)
	require.NoError(t, err)
	require.NoError(t, pb.UnpackSession(ctx, testID, noTasks))
	assert.NoDirExists(t, filepath.Join(b.StateRoot, "tasks", testID))
	assert.True(t, pb.HasSession(ctx, testID))

	// No staging directory is left behind.
	for _, p := range files.Tree(t, b.StateRoot) {
		assert.NotContains(t, p, stagingPrefix)
	}
}

func TestFilesLayout(t *testing.T) {
	places := func(_ agent.Env, id string) ([]Place, error) {
		return []Place{
			{Name: "log/" + id + ".jsonl", Path: "sessions/" + id + ".jsonl", Primary: true},
			{Name: "blobs/" + id, Path: "blobs/" + id, Dir: true},
		}, nil
	}
	base := t.TempDir()
	a := agent.Env{StateRoot: filepath.Join(base, "a")}
	files.Write(t, a.StateRoot, "sessions/"+testID+".jsonl", "turn 1\n")
	files.Write(t, a.StateRoot, "blobs/"+testID+"/1", "blob\n")
	blob, err := New("scripted", a, Limits{}, Files(places)).PackSession(ctx, testID)
	require.NoError(t, err)
	b := agent.Env{StateRoot: filepath.Join(base, "b")}
	pb := New("scripted", b, Limits{}, Files(places))
	require.NoError(t, pb.UnpackSession(ctx, testID, blob))
	assert.Equal(t, []string{"blobs/" + testID + "/1", "sessions/" + testID + ".jsonl"}, files.List(t, b.StateRoot))
	assert.True(t, pb.HasSession(ctx, testID))

	// A layout that would itself be unsafe is refused.
	bad := New("scripted", a, Limits{}, Files(func(agent.Env, string) ([]Place, error) {
		return []Place{{Name: "x", Path: "../x", Primary: true}}, nil
	}))
	_, err = bad.PackSession(ctx, testID)
	assert.ErrorIs(t, err, ErrUnsafePath)
}

func TestPackRefusals(t *testing.T) {
	t.Run("no session", func(t *testing.T) {
		env := testEnv(t, "x")
		_, err := newTestPacker(env, Limits{}).PackSession(ctx, testID)
		assert.ErrorIs(t, err, ErrNoSession)
		seedSession(t, env, otherID)
		_, err = newTestPacker(env, Limits{}).PackSession(ctx, testID)
		assert.ErrorIs(t, err, ErrNoSession)
	})
	t.Run("bad id", func(t *testing.T) {
		env := testEnv(t, "x")
		for _, id := range []string{"", "..", "../x", "a/b", ".hidden", "x\x00"} {
			_, err := newTestPacker(env, Limits{}).PackSession(ctx, id)
			assert.ErrorIs(t, err, ErrUnsafePath, "id %q", id)
			assert.False(t, newTestPacker(env, Limits{}).HasSession(ctx, id))
		}
	})
	t.Run("symlinked transcript", func(t *testing.T) {
		env := testEnv(t, "x")
		slug := slugOf(t, env)
		files.Write(t, env.StateRoot, "elsewhere.jsonl", "x")
		require.NoError(t, os.MkdirAll(filepath.Join(env.StateRoot, "projects", slug), 0o755))
		require.NoError(t, os.Symlink("../../elsewhere.jsonl", filepath.Join(env.StateRoot, "projects", slug, testID+".jsonl")))
		_, err := newTestPacker(env, Limits{}).PackSession(ctx, testID)
		assert.ErrorIs(t, err, ErrLinkEntry)
		assert.False(t, newTestPacker(env, Limits{}).HasSession(ctx, testID))
	})
	t.Run("symlink in a session dir", func(t *testing.T) {
		env := testEnv(t, "x")
		slug := seedSession(t, env, testID)
		require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(env.StateRoot, "projects", slug, testID, "passwd")))
		_, err := newTestPacker(env, Limits{}).PackSession(ctx, testID)
		assert.ErrorIs(t, err, ErrLinkEntry)
	})
	t.Run("fifo in a session dir", func(t *testing.T) {
		env := testEnv(t, "x")
		seedSession(t, env, testID)
		mkfifo(t, filepath.Join(env.StateRoot, "tasks", testID, "pipe"))
		_, err := newTestPacker(env, Limits{}).PackSession(ctx, testID)
		assert.ErrorIs(t, err, ErrSpecialEntry)
	})
	t.Run("over limits", func(t *testing.T) {
		env := testEnv(t, "x")
		seedSession(t, env, testID)
		for _, l := range []Limits{{MaxFiles: 3}, {MaxFileBytes: 5}, {MaxTotalBytes: 20}} {
			_, err := newTestPacker(env, l).PackSession(ctx, testID)
			assert.ErrorIs(t, err, ErrTooLarge, "%+v", l)
		}
	})
}

// A refusal during commit leaves the live root as it was: when the last
// part of the session clashes with what the live root holds there (a file
// or a symlink where tasks/<id>/ goes), no earlier part has been swapped
// in. The live root holds an older copy of the same session, so a swapped
// part would show.
func TestCommitClashOnLastPartChangesNothing(t *testing.T) {
	src := testEnv(t, "x")
	seedSession(t, src, testID)
	withTasks, err := newTestPacker(src, Limits{}).PackSession(ctx, testID)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(src.StateRoot, "tasks", testID)))
	withoutTasks, err := newTestPacker(src, Limits{}).PackSession(ctx, testID)
	require.NoError(t, err)

	clashes := map[string]func(t *testing.T, env agent.Env, at string){
		"file": func(t *testing.T, env agent.Env, at string) {
			require.NoError(t, os.WriteFile(at, []byte("not a folder"), 0o600))
		},
		"symlink": func(t *testing.T, env agent.Env, at string) {
			outside := filepath.Join(filepath.Dir(env.StateRoot), "outside")
			require.NoError(t, os.MkdirAll(outside, 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(outside, "precious"), []byte("precious"), 0o600))
			require.NoError(t, os.Symlink(outside, at))
		},
	}
	archives := map[string][]byte{
		"archive holds tasks":            withTasks,    // the clash is on a part being placed
		"archive holds no tasks (stale)": withoutTasks, // the clash is on a stale part being removed
	}
	for aname, blob := range archives {
		for cname, plant := range clashes {
			t.Run(aname+"/"+cname, func(t *testing.T) {
				dst := testEnv(t, "y")
				slug := slugOf(t, dst)
				files.Write(t, dst.StateRoot, "projects/"+slug+"/"+testID+".jsonl", "old transcript\n")
				files.Write(t, dst.StateRoot, "projects/"+slug+"/"+testID+"/subagents/old.jsonl", "old subagent\n")
				files.Write(t, dst.StateRoot, "projects/"+slug+"/"+testID+"/subagents/agent-a1.jsonl", "old a1\n")
				require.NoError(t, os.MkdirAll(filepath.Join(dst.StateRoot, "tasks"), 0o700))
				plant(t, dst, filepath.Join(dst.StateRoot, "tasks", testID))
				before := snapshot(t, filepath.Dir(dst.StateRoot))

				err := newTestPacker(dst, Limits{}).UnpackSession(ctx, testID, blob)
				require.ErrorIs(t, err, ErrExists)
				assert.Equal(t, before, snapshot(t, filepath.Dir(dst.StateRoot)), "the refused unpack changed the live root")
			})
		}
	}
}

package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/testenv"
)

type env struct {
	t     *testing.T
	blobs blob.Store
	n     int
}

func newEnv(t *testing.T) *env {
	b, err := blob.Open(context.Background(), "mem://")
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return &env{t: t, blobs: b}
}

// worker returns a workspace of run on a new, empty worker.
func (e *env) worker(run string) *Workspace {
	e.t.Helper()
	e.n++
	dir := e.t.TempDir()
	m := NewManager(filepath.Join(dir, "state"), e.blobs, Limits{}, nil)
	w, err := m.Open(context.Background(), run, filepath.Join(dir, "work"))
	require.NoError(e.t, err)
	e.t.Cleanup(w.Close)
	return w
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
}

// tree reads every regular file and link under root, leaving out .git.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			require.NoError(t, err)
			out[filepath.ToSlash(rel)] = "-> " + l
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	}))
	return out
}

func info(msg string) CommitInfo {
	return CommitInfo{Message: msg, When: time.Unix(1_800_000_000, 0)}
}

// firstState writes files into a worker of run-1 and snapshots them as
// the run's first state, with msg.
func firstState(t *testing.T, e *env, files map[string]string, msg string) (*Workspace, *runstore.WorkspaceState) {
	t.Helper()
	w := e.worker("run-1")
	write(t, w.Dir(), files)
	st, _, err := w.Snapshot(context.Background(), nil, info(msg))
	require.NoError(t, err)
	return w, st
}

func TestSnapshotRestoreRoundTripOnANewWorker(t *testing.T) {
	e := newEnv(t)
	a := e.worker("run-1")
	_, err := a.Restore(context.Background(), nil)
	require.NoError(t, err)
	write(t, a.Dir(), map[string]string{"main.go": "package main\n", "pkg/util.go": "package pkg\n", "README": "hi\n"})
	require.NoError(t, os.Chmod(filepath.Join(a.Dir(), "README"), 0o755))
	require.NoError(t, os.Symlink("pkg/util.go", filepath.Join(a.Dir(), "link")))
	s1, rep, err := a.Snapshot(context.Background(), nil, info("writer visit 1"))
	require.NoError(t, err)
	require.True(t, rep.Changed)
	assert.Equal(t, 4, s1.Files)
	assert.Len(t, s1.Packs, 1)
	assert.Equal(t, 1, s1.Commits)

	// Unchanged: no commit, nothing uploaded.
	s1b, rep, err := a.Snapshot(context.Background(), s1, info("writer visit 2"))
	require.NoError(t, err)
	assert.False(t, rep.Changed)
	assert.Equal(t, s1, s1b)

	// Another worker, empty disk.
	b := e.worker("run-1")
	got, err := b.Restore(context.Background(), s1)
	require.NoError(t, err)
	assert.False(t, got.Hit)
	assert.Equal(t, 4, got.Written)
	assert.Equal(t, tree(t, a.Dir()), tree(t, b.Dir()))
	fi, err := os.Stat(filepath.Join(b.Dir(), "README"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())

	// It edits one file and deletes another; the first worker catches up.
	write(t, b.Dir(), map[string]string{"pkg/util.go": "package pkg // v2\n"})
	require.NoError(t, os.Remove(filepath.Join(b.Dir(), "README")))
	s2, rep, err := b.Snapshot(context.Background(), s1, info("tests visit 1"))
	require.NoError(t, err)
	require.True(t, rep.Changed)
	assert.Less(t, rep.Uploaded, int64(2000), "a one-file change uploads about one file")
	a.Touched()
	got, err = a.Restore(context.Background(), s2)
	require.NoError(t, err)
	assert.Equal(t, 1, got.Written)
	assert.Equal(t, 1, got.Removed)
	assert.Equal(t, tree(t, b.Dir()), tree(t, a.Dir()))

	// Back to the first snapshot (a rewind).
	got, err = a.Restore(context.Background(), s1)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"main.go": "package main\n", "pkg/util.go": "package pkg\n", "README": "hi\n", "link": "-> pkg/util.go"}, tree(t, a.Dir()))
}

func TestRestoreHitWhenUntouched(t *testing.T) {
	e := newEnv(t)
	a, s1 := firstState(t, e, map[string]string{"f": "1"}, "v1")
	got, err := a.Restore(context.Background(), s1)
	require.NoError(t, err)
	assert.True(t, got.Hit)
	// A visit that touched the directory and failed leaves it to be checked.
	a.Touched()
	write(t, a.Dir(), map[string]string{"f": "garbage", "junk": "x"})
	got, err = a.Restore(context.Background(), s1)
	require.NoError(t, err)
	assert.False(t, got.Hit)
	assert.Equal(t, map[string]string{"f": "1"}, tree(t, a.Dir()))
}

func TestSnapshotLeavesOutWhatNeverTravels(t *testing.T) {
	e := newEnv(t)
	a := e.worker("run-1")
	write(t, a.Dir(), map[string]string{
		"keep.go":                   "k",
		".gitignore":                "build/\n*.log\n",
		"build/out.bin":             "bin",
		"debug.log":                 "log",
		".git/config":               "[core]",
		"sub/.git/HEAD":             "ref",
		"sub/file":                  "nested repo files do travel",
		".claude/.credentials.json": "secret",
		"home/.codex/auth.json":     "secret",
		".claude/settings.json":     "project settings travel",
	})
	require.NoError(t, os.Symlink("../../etc/passwd", filepath.Join(a.Dir(), "escape")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(a.Dir(), "abs")))
	require.NoError(t, os.Symlink("keep.go", filepath.Join(a.Dir(), "ok")))
	s1, rep, err := a.Snapshot(context.Background(), nil, info("v1"))
	require.NoError(t, err)
	notes := strings.Join(rep.Notes, "\n")
	assert.Contains(t, notes, "escape")
	assert.Contains(t, notes, "abs")
	assert.Contains(t, notes, ".credentials.json")
	assert.NotContains(t, notes, "secret")

	b := e.worker("run-1")
	_, err = b.Restore(context.Background(), s1)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"keep.go": "k", ".gitignore": "build/\n*.log\n", "sub/file": "nested repo files do travel",
		".claude/settings.json": "project settings travel", "ok": "-> keep.go",
	}, tree(t, b.Dir()))
}

func TestSnapshotLimits(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	m := NewManager(filepath.Join(dir, "state"), e.blobs, Limits{MaxFiles: 3, MaxFileBytes: 10, MaxDepth: 2}, nil)
	w, err := m.Open(context.Background(), "run-1", filepath.Join(dir, "work"))
	require.NoError(t, err)
	defer w.Close()
	write(t, w.Dir(), map[string]string{"big": "01234567890"})
	_, _, err = w.Snapshot(context.Background(), nil, info("v"))
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "TETHER_WORKSPACE_MAX_FILE_BYTES")
	require.NoError(t, os.Remove(filepath.Join(w.Dir(), "big")))
	write(t, w.Dir(), map[string]string{"a/b/c/d": "deep"})
	_, _, err = w.Snapshot(context.Background(), nil, info("v"))
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "deep")
	require.NoError(t, os.RemoveAll(filepath.Join(w.Dir(), "a")))
	write(t, w.Dir(), map[string]string{"1": "", "2": "", "3": "", "4": ""})
	_, _, err = w.Snapshot(context.Background(), nil, info("v"))
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "TETHER_WORKSPACE_MAX_FILES")
}

// TestPacksAreGitPacks checks the packs with git itself: git indexes them,
// fsck finds every object sound, and the history reads as one commit per
// snapshot.
func TestPacksAreGitPacks(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		testenv.Unavailable(t, "git is not installed (apt-get install git)")
	}
	e := newEnv(t)
	a := e.worker("run-1")
	var s *runstore.WorkspaceState
	const visits = 40
	for i := 1; i <= visits; i++ {
		write(t, a.Dir(), map[string]string{"f": strings.Repeat("x", i*100), fmt.Sprintf("dir/g%02d", i): "g"})
		var err error
		s, _, err = a.Snapshot(context.Background(), s, info(fmt.Sprintf("writer visit %d", i)))
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, len(s.Packs), maxPacks, "packs merge")
	assert.Greater(t, len(s.Packs), 1)
	repo := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command(gitBin, append([]string{"--git-dir", repo}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return string(out)
	}
	git("init", "--bare", "-q")
	for _, p := range s.Packs {
		b, err := blob.GetBytes(context.Background(), e.blobs, p.Key)
		require.NoError(t, err)
		pf := filepath.Join(t.TempDir(), "p.pack")
		require.NoError(t, os.WriteFile(pf, b, 0o644))
		git("index-pack", "--strict", "-o", filepath.Join(repo, "objects", "pack", filepath.Base(p.Key)[:16]+".idx"), pf)
		require.NoError(t, os.Rename(pf, filepath.Join(repo, "objects", "pack", filepath.Base(p.Key)[:16]+".pack")))
	}
	git("update-ref", "refs/heads/main", s.Commit)
	git("fsck", "--strict", "--no-dangling", "main")
	log := strings.Split(strings.TrimSpace(git("log", "--format=%s", "main")), "\n")
	require.Len(t, log, visits, "one commit per snapshot")
	assert.Equal(t, "writer visit 40", log[0])
	assert.Equal(t, "writer visit 1", log[visits-1])
	files := strings.Fields(git("ls-tree", "-r", "--name-only", "main"))
	assert.Len(t, files, visits+1)
	sort.Strings(files)
	assert.Equal(t, "dir/g01", files[0])

	// A new worker restores the last snapshot from the merged packs.
	b := e.worker("run-1")
	_, err = b.Restore(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, tree(t, a.Dir()), tree(t, b.Dir()))
	assert.Equal(t, "Tether <tether@localhost>\n", git("log", "-1", "--format=%an <%ae>", "main"))
}

func TestDiffSinceTheStart(t *testing.T) {
	e := newEnv(t)
	a, s1 := firstState(t, e, map[string]string{"main.go": "package main\n\nfunc main() {}\n"}, "import")
	write(t, a.Dir(), map[string]string{"main.go": "package main\n\nfunc main() { println(1) }\n", "new.txt": "n\n"})
	s2, _, err := a.Snapshot(context.Background(), s1, info("writer visit 1"))
	require.NoError(t, err)
	b := e.worker("run-1")
	_, err = b.Restore(context.Background(), s2)
	require.NoError(t, err)
	d, err := b.Diff(context.Background(), s1.Commit, s2.Commit, 0)
	require.NoError(t, err)
	assert.Contains(t, d, "diff --git a/main.go b/main.go")
	assert.Contains(t, d, "-func main() {}")
	assert.Contains(t, d, "+func main() { println(1) }")
	assert.Contains(t, d, "+n")
	all, err := b.Diff(context.Background(), "", s2.Commit, 40)
	require.NoError(t, err)
	assert.Contains(t, all, "diff cut at 40")
}

// A worker's umask does not take bits off a restored file: the snapshot's
// mode wins (an executable stays executable for a tool node's script).
func TestRestoreKeepsModesUnderAStrictUmask(t *testing.T) {
	e := newEnv(t)
	a := e.worker("run-1")
	write(t, a.Dir(), map[string]string{"run.sh": "#!/bin/sh\n", "data": "d\n"})
	require.NoError(t, os.Chmod(filepath.Join(a.Dir(), "run.sh"), 0o755))
	s, _, err := a.Snapshot(context.Background(), nil, info("writer visit 1"))
	require.NoError(t, err)

	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	b := e.worker("run-1")
	_, err = b.Restore(context.Background(), s)
	require.NoError(t, err)
	for name, want := range map[string]os.FileMode{"run.sh": 0o755, "data": 0o644} {
		fi, err := os.Stat(filepath.Join(b.Dir(), name))
		require.NoError(t, err)
		assert.Equal(t, want, fi.Mode().Perm(), name)
	}
}

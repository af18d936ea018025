package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/testenv"
)

func needGit(t *testing.T) string {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		testenv.Unavailable(t, "git is not installed (apt-get install git)")
	}
	return gitBin
}

// trunkState snapshots files as the run's trunk at a fan-out.
func trunkState(t *testing.T, e *env, files map[string]string) *runstore.WorkspaceState {
	t.Helper()
	_, st := firstState(t, e, files, "trunk")
	return st
}

// branchState is one branch's visit on its own worker: it restores the
// trunk, writes files, removes some, and snapshots.
func branchState(t *testing.T, e *env, trunk *runstore.WorkspaceState, msg string, files map[string]string, remove ...string) *runstore.WorkspaceState {
	t.Helper()
	w := e.worker("run-1")
	_, err := w.Restore(context.Background(), trunk)
	require.NoError(t, err)
	write(t, w.Dir(), files)
	for _, r := range remove {
		require.NoError(t, os.Remove(filepath.Join(w.Dir(), r)))
	}
	st, _, err := w.Snapshot(context.Background(), trunk, info(msg))
	require.NoError(t, err)
	return st
}

func mergeInfo() CommitInfo {
	i := info("gather merge")
	i.Details = []string{"branches: x, y"}
	return i
}

// mergeXY merges branches x and y into trunk on a worker of run-1.
func mergeXY(t *testing.T, e *env, trunk, x, y *runstore.WorkspaceState) (*Workspace, *runstore.WorkspaceState, Merged) {
	t.Helper()
	w := e.worker("run-1")
	st, rep, err := w.Merge(context.Background(), trunk, []MergeBranch{{"x", x}, {"y", y}}, mergeInfo())
	require.NoError(t, err)
	return w, st, rep
}

// mergeFiles merges, on a fresh env, branch x (a trunk of trunkFiles with
// xFiles written and xRemoved removed) and branch y (the trunk with yFiles
// written) into the trunk, on a worker of run-1.
func mergeFiles(t *testing.T, trunkFiles, xFiles, yFiles map[string]string, xRemoved ...string) (trunk *runstore.WorkspaceState, w *Workspace, st *runstore.WorkspaceState, rep Merged) {
	t.Helper()
	needGit(t)
	e := newEnv(t)
	trunk = trunkState(t, e, trunkFiles)
	x := branchState(t, e, trunk, "x", xFiles, xRemoved...)
	y := branchState(t, e, trunk, "y", yFiles)
	w, st, rep = mergeXY(t, e, trunk, x, y)
	return trunk, w, st, rep
}

// parentsOf returns the parents of the commit st names, read from w's
// store.
func parentsOf(t *testing.T, w *Workspace, st *runstore.WorkspaceState) []plumbing.Hash {
	t.Helper()
	h, err := parseHash(st.Commit)
	require.NoError(t, err)
	content, err := w.store.readAs(h, plumbing.CommitObject)
	require.NoError(t, err)
	_, parents, _, err := decodeCommit(h, content)
	require.NoError(t, err)
	return parents
}

func TestMergeDisjointBranches(t *testing.T) {
	gitBin := needGit(t)
	ctx := context.Background()
	e := newEnv(t)
	trunk := trunkState(t, e, map[string]string{"a": "a\n", "b": "b\n", "dir/c": "c\n"})
	x := branchState(t, e, trunk, "x visit 1", map[string]string{"a": "a\nmore\n", "x.txt": "x\n"})
	y := branchState(t, e, trunk, "y visit 1", map[string]string{"y/y.txt": "y\n"}, "b")

	w, st, rep := mergeXY(t, e, trunk, x, y)
	require.True(t, rep.Changed)
	assert.Empty(t, rep.Conflicts)
	want := map[string]string{"a": "a\nmore\n", "x.txt": "x\n", "y/y.txt": "y\n", "dir/c": "c\n"}
	assert.Equal(t, want, tree(t, w.Dir()))
	assert.Equal(t, trunk.Commits+3, st.Commits, "trunk's, one per branch, the merge")
	for _, p := range UnionPacks(trunk.Packs, x.Packs, y.Packs) {
		assert.Contains(t, st.Packs, p)
	}

	// Another worker restores the merge.
	b := e.worker("run-1")
	_, err := b.Restore(ctx, st)
	require.NoError(t, err)
	assert.Equal(t, want, tree(t, b.Dir()))

	// git reads it: three parents, every branch on its ref.
	repo := filepath.Join(t.TempDir(), "repo.git")
	require.NoError(t, HistoryWithBranches(ctx, e.blobs, "run-1", st, map[string]*runstore.WorkspaceState{"x": x, "fan/y": y}, repo, Limits{}))
	git := func(args ...string) string {
		out, err := exec.Command(gitBin, append([]string{"--git-dir", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("fsck", "--strict", "--no-dangling", "main", "x", "fan/y")
	assert.Equal(t, trunk.Commit+" "+x.Commit+" "+y.Commit, git("log", "-1", "--format=%P", "main"))
	assert.Equal(t, "gather merge", git("log", "-1", "--format=%s", "main"))
	assert.Equal(t, x.Commit, git("rev-parse", "x"))
	assert.Equal(t, y.Commit, git("rev-parse", "fan/y"))
	subjects := git("log", "--all", "--format=%s")
	for _, s := range []string{"gather merge", "x visit 1", "y visit 1", "trunk"} {
		assert.Contains(t, subjects, s)
	}

	// Stat of the merge against the trunk.
	got, err := b.Stat(ctx, trunk.Commit, st.Commit)
	require.NoError(t, err)
	assert.Equal(t, DiffStat{Files: 4, Added: 3, Removed: 1}, got)
}

func TestMergeConflictOnOneLine(t *testing.T) {
	trunk, w, st, rep := mergeFiles(t, map[string]string{"f": "1\n2\n3\n"}, map[string]string{"f": "1\nX\n3\n"}, map[string]string{"f": "1\nY\n3\n"})
	require.True(t, rep.Changed)
	require.Len(t, rep.Conflicts, 1)
	c := rep.Conflicts[0]
	assert.Equal(t, "f", c.Path)
	assert.Equal(t, []string{"x", "y"}, c.Branches)
	assert.Equal(t, "1\nX\n3\n", c.Ours)
	assert.Equal(t, "1\nY\n3\n", c.Theirs)
	f := tree(t, w.Dir())["f"]
	assert.Equal(t, "1\n<<<<<<< ours\nX\n=======\nY\n>>>>>>> y\n3\n", f)
	assert.NotEqual(t, trunk.Commit, st.Commit)
}

func TestMergeContentAndKinds(t *testing.T) {
	lines := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	_, w, _, rep := mergeFiles(t,
		map[string]string{"f": lines, "gone": "g\n", "bin": "a\x00b", "same": "s\n"},
		map[string]string{"f": strings.Replace(lines, "2\n", "two\n", 1), "new": "from x\n", "bin": "x\x00", "same": "S\n"},
		map[string]string{"f": strings.Replace(lines, "9\n", "nine\n", 1), "new": "from y\n", "gone": "changed\n", "bin": "y\x00", "same": "S\n"},
		"gone")
	got := tree(t, w.Dir())
	assert.Equal(t, strings.NewReplacer("2\n", "two\n", "9\n", "nine\n").Replace(lines), got["f"], "non-overlapping edits merge cleanly")
	assert.Equal(t, "S\n", got["same"], "the same change on both sides")
	assert.Equal(t, "x\x00", got["bin"], "a binary conflict keeps ours")
	_, has := got["gone"]
	assert.False(t, has, "delete against modify keeps ours: deleted")
	assert.Contains(t, got["new"], "<<<<<<< ours\nfrom x\n=======\nfrom y\n>>>>>>> y\n", "add/add merges with an empty base")
	byPath := map[string]Conflict{}
	for _, c := range rep.Conflicts {
		byPath[c.Path] = c
	}
	assert.Len(t, byPath, 3)
	assert.Equal(t, Conflict{Path: "gone", Branches: []string{"x", "y"}, Ours: "", Theirs: "changed\n"}, byPath["gone"])
	assert.Equal(t, "y\x00", byPath["bin"].Theirs)
	assert.Contains(t, byPath, "new")
}

func TestMergeFileAgainstDirectory(t *testing.T) {
	_, w, _, rep := mergeFiles(t, map[string]string{"keep": "k\n"}, map[string]string{"p/q": "dir\n"}, map[string]string{"p": "file\n"})
	assert.Equal(t, map[string]string{"keep": "k\n", "p/q": "dir\n"}, tree(t, w.Dir()))
	require.Len(t, rep.Conflicts, 1)
	assert.Equal(t, Conflict{Path: "p", Branches: []string{"x", "y"}, Theirs: "file\n"}, rep.Conflicts[0])
}

func TestMergeUnchangedBranches(t *testing.T) {
	e := newEnv(t)
	trunk := trunkState(t, e, map[string]string{"f": "1\n"})
	same := branchState(t, e, trunk, "x", nil)
	require.Equal(t, trunk.Commit, same.Commit)
	w := e.worker("run-1")
	write(t, w.Dir(), map[string]string{"stray": "left by a failed visit"})
	st, rep, err := w.Merge(context.Background(), trunk, []MergeBranch{{"x", same}, {"y", trunk}}, mergeInfo())
	require.NoError(t, err)
	assert.False(t, rep.Changed)
	assert.Same(t, trunk, st)
	assert.Equal(t, map[string]string{"f": "1\n"}, tree(t, w.Dir()), "the directory holds the trunk")
}

func TestStatAcrossBranches(t *testing.T) {
	e := newEnv(t)
	trunk := trunkState(t, e, map[string]string{"a": "1\n2\n3\n", "b": "gone\ngone\n", "bin": "\x00\x01"})
	x := branchState(t, e, trunk, "x", map[string]string{"a": "1\nTWO\n3\n4\n", "c": "new", "bin": "\x00\x02"}, "b")
	y := branchState(t, e, trunk, "y", map[string]string{"d": "d\n"})
	// A fresh worker loads both branches, without touching its directory.
	w := e.worker("run-1")
	write(t, w.Dir(), map[string]string{"mine": "m"})
	require.NoError(t, w.Load(context.Background(), x))
	require.NoError(t, w.Load(context.Background(), y))
	got, err := w.Stat(context.Background(), trunk.Commit, x.Commit)
	require.NoError(t, err)
	assert.Equal(t, DiffStat{Files: 4, Added: 3, Removed: 3}, got)
	got, err = w.Stat(context.Background(), x.Commit, y.Commit)
	require.NoError(t, err)
	assert.Equal(t, 5, got.Files)
	assert.Equal(t, map[string]string{"mine": "m"}, tree(t, w.Dir()))
}

func TestUnionPacks(t *testing.T) {
	p := func(k string) runstore.WorkspacePack { return runstore.WorkspacePack{Key: k} }
	assert.Equal(t, []runstore.WorkspacePack{p("a"), p("b"), p("c"), p("d")},
		UnionPacks([]runstore.WorkspacePack{p("a"), p("b")}, nil, []runstore.WorkspacePack{p("a"), p("c"), p("b"), p("d")}))
	assert.Nil(t, UnionPacks())

}

func TestHistoryRefusesBadBranchNames(t *testing.T) {
	e := newEnv(t)
	trunk := trunkState(t, e, map[string]string{"f": "1\n"})
	for _, name := range []string{"a..b", "-x", ".x", "x/", "a//b", "x.lock", "a b", "a~1", "main", "", "ref:x"} {
		err := HistoryWithBranches(context.Background(), e.blobs, "run-1", trunk,
			map[string]*runstore.WorkspaceState{name: trunk}, filepath.Join(t.TempDir(), "r"), Limits{})
		assert.Error(t, err, "%q", name)
	}
	for _, name := range []string{"x", "fan-out/branch_1", "v1.2"} {
		assert.NoError(t, ValidBranchName(name), name)
	}
}

// git merge-file runs with an environment of its own: nothing of the
// worker's, whose variables hold secrets, and no user or system config.
func TestMergeEnvIsSanitised(t *testing.T) {
	t.Setenv("TETHER_TEST_SECRET", "hunter2")
	t.Setenv("GIT_CONFIG_PARAMETERS", "'merge.conflictstyle'='diff3'")
	env := mergeEnv("/tmp/tether-merge-1")
	joined := strings.Join(env, "\n")
	assert.NotContains(t, joined, "TETHER_TEST_SECRET")
	assert.NotContains(t, joined, "hunter2")
	assert.NotContains(t, joined, "GIT_CONFIG_PARAMETERS")
	assert.Contains(t, env, "GIT_CONFIG_NOSYSTEM=1")
	assert.Contains(t, env, "GIT_CONFIG_GLOBAL=/dev/null")
	assert.Contains(t, env, "GIT_TERMINAL_PROMPT=0")
	assert.Contains(t, env, "HOME=/tmp/tether-merge-1/home")
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		assert.Contains(t, []string{"PATH", "HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_ATTR_NOSYSTEM", "GIT_TERMINAL_PROMPT", "GIT_CEILING_DIRECTORIES", "LC_ALL"}, k)
	}
}

// A fan-out from an empty workspace: the merge commit's parents are the
// branch heads alone.
func TestMergeFromAnEmptyTrunk(t *testing.T) {
	needGit(t)
	e := newEnv(t)
	empty := &runstore.WorkspaceState{}
	x := branchState(t, e, empty, "x", map[string]string{"x": "x\n"})
	y := branchState(t, e, empty, "y", map[string]string{"y": "y\n"})
	w, st, rep := mergeXY(t, e, nil, x, y)
	require.True(t, rep.Changed)
	assert.Equal(t, 3, st.Commits)
	assert.Equal(t, map[string]string{"x": "x\n", "y": "y\n"}, tree(t, w.Dir()))
	parents := parentsOf(t, w, st)
	assert.Equal(t, []plumbing.Hash{plumbing.NewHash(x.Commit), plumbing.NewHash(y.Commit)}, parents)
}

// A branch that moved but ended where it began still joins: the merge
// commit is made, with its head as a parent.
func TestMergeOfARevertedBranchMakesItsCommit(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	trunk := trunkState(t, e, map[string]string{"f": "1\n"})
	w0 := e.worker("run-1")
	_, err := w0.Restore(ctx, trunk)
	require.NoError(t, err)
	write(t, w0.Dir(), map[string]string{"f": "2\n"})
	x1, _, err := w0.Snapshot(ctx, trunk, info("x visit 1"))
	require.NoError(t, err)
	write(t, w0.Dir(), map[string]string{"f": "1\n"})
	x2, _, err := w0.Snapshot(ctx, x1, info("x visit 2"))
	require.NoError(t, err)
	require.NotEqual(t, trunk.Commit, x2.Commit)

	w := e.worker("run-1")
	st, rep, err := w.Merge(ctx, trunk, []MergeBranch{{"x", x2}}, mergeInfo())
	require.NoError(t, err)
	assert.True(t, rep.Changed)
	assert.Empty(t, rep.Conflicts)
	assert.Equal(t, trunk.Commits+3, st.Commits)
	parents := parentsOf(t, w, st)
	assert.Equal(t, []plumbing.Hash{plumbing.NewHash(trunk.Commit), plumbing.NewHash(x2.Commit)}, parents)
	assert.Equal(t, map[string]string{"f": "1\n"}, tree(t, w.Dir()))
}

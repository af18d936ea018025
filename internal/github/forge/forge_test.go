package forge_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/github/forge"
	"github.com/tether-run/tether/internal/github/githubtest"
	"github.com/tether-run/tether/internal/workspace"
)

// TestPublishARun imports a repository through the App's token, commits
// two visits on the run's workspace, pushes them to the run's branch on
// a real git server (git http-backend) and opens a pull request; doing
// it all again pushes nothing new, opens no second pull request and
// posts no second comment; a third visit is one more commit on the same
// branch.
func TestPublishARun(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module demo\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sum"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "sum", "sum.go"), []byte("package sum\n"), 0o644))
	srv := githubtest.New(t, "acme/widgets", src, "ghs_canary_")
	base := strings.TrimSpace(srv.Git.Git(t, "acme/widgets", "rev-parse", "main"))
	f, err := forge.New(forge.Config{API: srv.URL, Git: srv.Git.URL, AppID: srv.AppID, AppKey: srv.Key})
	require.NoError(t, err)
	assert.NotContains(t, f.String(), "PRIVATE", "a forge prints without its key")

	ctx := context.Background()
	blobs, err := blob.Open(ctx, "file://"+t.TempDir())
	require.NoError(t, err)
	const run = "gh-widgets-7-abcd0123"
	st, commit, err := f.Import(ctx, srv.Installation, blobs, run, "acme/widgets", "main", workspace.Limits{}, time.Unix(1700000000, 0))
	require.NoError(t, err)
	assert.Equal(t, base, commit, "the import says which commit it read")

	m := workspace.NewManager(t.TempDir(), blobs, workspace.Limits{}, nil)
	dir := t.TempDir()
	visit := func(n int, file, content string) {
		w, err := m.Open(ctx, run, dir)
		require.NoError(t, err)
		defer w.Close()
		_, err = w.Restore(ctx, st)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
		st, _, err = w.Snapshot(ctx, st, workspace.CommitInfo{Message: "writer visit " + string(rune('0'+n)), When: time.Unix(int64(1700000000+n*60), 0)})
		require.NoError(t, err)
	}
	visit(1, "sum/sum.go", "package sum\n\nfunc Sum() int { return 0 }\n")
	visit(2, "sum/sum_test.go", "package sum\n")

	branch := github.Branch(run)
	p1, err := f.PushRun(ctx, srv.Installation, blobs, workspace.Limits{}, run, st, "acme/widgets", branch, "main", base)
	require.NoError(t, err)
	assert.Equal(t, 2, p1.Commits)
	log := srv.Git.Git(t, "acme/widgets", "log", "--format=%s", branch)
	assert.Equal(t, "writer visit 2\nwriter visit 1\nthe first commit\n", log)
	p2, err := f.PushRun(ctx, srv.Installation, blobs, workspace.Limits{}, run, st, "acme/widgets", branch, "main", base)
	require.NoError(t, err)
	assert.Equal(t, p1.Head, p2.Head, "the same history makes the same commits")

	spec := forge.PullRequestSpec{Head: branch, Base: "main", Title: "Fix #7", Body: "Fixes #7"}
	pr, err := f.UpsertPullRequest(ctx, srv.Installation, "acme/widgets", spec)
	require.NoError(t, err)
	again, err := f.UpsertPullRequest(ctx, srv.Installation, "acme/widgets", spec)
	require.NoError(t, err)
	assert.Equal(t, pr.Number, again.Number, "found by its head branch, not opened twice")
	require.Len(t, srv.Pulls(), 1)

	id1, err := f.UpsertComment(ctx, srv.Installation, "acme/widgets", 7, "run:"+run, "running", 0)
	require.NoError(t, err)
	id2, err := f.UpsertComment(ctx, srv.Installation, "acme/widgets", 7, "run:"+run, "running", 0)
	require.NoError(t, err)
	assert.Equal(t, id1, id2)
	require.Len(t, srv.Comments(7), 1, "a comment posted again is found by its marker")
	srv.DeleteComment(id1)
	id3, err := f.UpsertComment(ctx, srv.Installation, "acme/widgets", 7, "run:"+run, "waiting", id1)
	require.NoError(t, err, "a status comment someone deleted is posted again")
	assert.NotEqual(t, id1, id3)
	require.Len(t, srv.Comments(7), 1)

	visit(3, "sum/sum.go", "package sum\n\nfunc Sum() int { return 1 }\n")
	p3, err := f.PushRun(ctx, srv.Installation, blobs, workspace.Limits{}, run, st, "acme/widgets", branch, "main", base)
	require.NoError(t, err)
	assert.Equal(t, 3, p3.Commits)
	assert.Equal(t, p1.Head, strings.TrimSpace(srv.Git.Git(t, "acme/widgets", "rev-parse", branch+"~1")), "the earlier commits are kept: a fast-forward")
	require.NoError(t, f.SetStatus(ctx, srv.Installation, "acme/widgets", p3.Head, forge.StatusPending, "waiting for a review", ""))
	assert.Empty(t, srv.Refused(), "only endpoints GitHub documents were asked for")
	for _, r := range srv.Requests() {
		for _, tok := range srv.Tokens() {
			assert.NotContains(t, r.Body, tok, "no token in a request body (%s)", r)
		}
	}
}

// A worker with a token instead of an App uses it as it is; a token
// GitHub does not know is a refusal, not something to retry.
func TestTokenInsteadOfAnApp(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "README"), []byte("hi\n"), 0o644))
	srv := githubtest.New(t, "acme/widgets", src, "ghs_canary_")
	app, err := forge.New(forge.Config{API: srv.URL, Git: srv.Git.URL, AppID: srv.AppID, AppKey: srv.Key})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = app.UpsertComment(ctx, srv.Installation, "acme/widgets", 1, "k1", "from the App", 0)
	require.NoError(t, err)
	require.Len(t, srv.Tokens(), 1)

	tok, err := forge.New(forge.Config{API: srv.URL, Git: srv.Git.URL, Token: srv.Tokens()[0]})
	require.NoError(t, err)
	assert.Equal(t, "github: token at "+strings.TrimPrefix(srv.URL, "http://"), tok.String())
	_, err = tok.UpsertComment(ctx, 0, "acme/widgets", 1, "k2", "from the token", 0)
	require.NoError(t, err)
	assert.Len(t, srv.Comments(1), 2)

	bad, err := forge.New(forge.Config{API: srv.URL, Git: srv.Git.URL, Token: "ghp_unknown"})
	require.NoError(t, err)
	_, err = bad.UpsertComment(ctx, 0, "acme/widgets", 1, "k3", "x", 0)
	assert.ErrorIs(t, err, forge.ErrRefused)
	_, _, err = bad.Import(ctx, 0, nil, "r", "acme/widgets", "main", workspace.Limits{}, time.Now())
	assert.Error(t, err, "git refuses the token too")
	assert.Positive(t, srv.Git.Refused())

	none, err := forge.New(forge.Config{})
	require.NoError(t, err)
	assert.Nil(t, none, "no credentials, no forge")
	_, err = forge.New(forge.Config{AppID: 3})
	assert.ErrorContains(t, err, forge.AppKeyEnv)
}

package github_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/github/githubtest"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

func TestParseCommand(t *testing.T) {
	for body, want := range map[string]github.Command{
		"/tether run fix":                         {Verb: "run", Graph: "fix"},
		"please\n/tether run fix budget=2 mode=x": {Verb: "run", Graph: "fix", Inputs: map[string]string{"budget": "2", "mode": "x"}},
		"/tether answer review-1 approved":        {Verb: "answer", Target: "review-1", Text: "approved"},
		"  /tether answer q-2 yes\nand more\n":    {Verb: "answer", Target: "q-2", Text: "yes\nand more"},
		"/tether guide writer keep it small":      {Verb: "guide", Target: "writer", Text: "keep it small"},
		"/tether cancel":                          {Verb: "cancel"},
		"/tether cancel run=gh-x-1-abcd":          {Verb: "cancel", Run: "gh-x-1-abcd"},
		"/TETHER answer":                          {},
	} {
		got, err := github.ParseCommand(body)
		if want.Verb == "" {
			assert.ErrorIs(t, err, github.ErrNotACommand, body)
			continue
		}
		require.NoError(t, err, body)
		assert.Equal(t, want, got, body)
	}
	for _, body := range []string{"/tether", "/tether run", "/tether answer", "/tether frobnicate", "/tether run fix nokey", "/tether cancel run=../x"} {
		_, err := github.ParseCommand(body)
		assert.ErrorIs(t, err, github.ErrBadCommand, body)
	}
	for _, body := range []string{"", "hello", "see /tether run fix", "/tetherrun fix"} {
		_, err := github.ParseCommand(body)
		assert.ErrorIs(t, err, github.ErrNotACommand, body)
	}
}

func TestRunIDAndBranch(t *testing.T) {
	a := github.RunID("acme/Widgets.Go", 12, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	assert.Equal(t, a, github.RunID("acme/Widgets.Go", 12, "72d3162e-cc78-11e3-81ab-4c9367dc0958"), "the same delivery names the same run")
	assert.NotEqual(t, a, github.RunID("acme/Widgets.Go", 12, "72d3162e-cc78-11e3-81ab-4c9367dc0959"))
	assert.Regexp(t, `^gh-widgets-go-12-[0-9a-f]{8}$`, a)
	require.NoError(t, runstore.ValidateRunID(a))
	require.NoError(t, workspace.ValidBranchName(github.Branch(a)))
	assert.Equal(t, a, github.RunOfBranch(github.Branch(a)))
	for _, ref := range []string{"main", "tether/", "tether/a/b", "feature/tether/x"} {
		assert.Empty(t, github.RunOfBranch(ref), ref)
	}
	assert.True(t, github.IsTrusted("collaborator"))
	assert.False(t, github.IsTrusted("CONTRIBUTOR"))
	assert.False(t, github.IsTrusted(""))
}

// The payloads the double sends, as GitHub documents them, read back.
func TestReadDeliveries(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644))
	gh := githubtest.New(t, "acme/widgets", dir, "ghs_")
	n := gh.OpenIssue("Broken", "It breaks.", "alice")

	d := gh.Labeled(n, "tether", "alice")
	got, ok, err := github.Read(d.ID, d.Event, d.Payload)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "labeled", got.Action)
	assert.Equal(t, "acme/widgets", got.Repo)
	assert.Equal(t, "main", got.DefaultBranch)
	assert.Equal(t, gh.Installation, got.Installation)
	assert.Equal(t, "tether", got.Label)
	assert.Equal(t, &github.Issue{Number: n, Title: "Broken", Body: "It breaks.", Author: "alice", URL: "https://github.com/acme/widgets/issues/1"}, got.Issue)

	d = gh.Commented(n, "bob", "COLLABORATOR", "/tether cancel")
	got, _, err = github.Read(d.ID, d.Event, d.Payload)
	require.NoError(t, err)
	assert.Equal(t, "created", got.Action)
	assert.Equal(t, "bob", got.Comment.Author)
	assert.Equal(t, "COLLABORATOR", got.Comment.Association)
	assert.False(t, got.Comment.Bot)

	_, ok, err = github.Read("x", "star", []byte(`{}`))
	require.NoError(t, err)
	assert.False(t, ok, "an event Tether does not read")
	_, _, err = github.Read("x", "issues", []byte(`{not json`))
	assert.ErrorIs(t, err, github.ErrPayload)
	_, _, err = github.Read("x", "issues", []byte(`{"action":"labeled"}`))
	assert.ErrorIs(t, err, github.ErrPayload, "no repository")
}

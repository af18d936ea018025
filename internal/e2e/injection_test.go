package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/internal/workspace"
)

// A checkpoint is read from an untrusted store, and its workspace commits
// reach git's command line in `tether workspace RUN diff`. A forged base
// of "--output=.bashrc" once made git overwrite .bashrc in the operator's
// directory with a file of the snapshot; through the real binary, every
// forged id is now refused and nothing is written.
func TestWorkspaceDiffRefusesForgedCommits(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Unavailable(t, "git is not installed")
	}
	bin, err := tetherBin()
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	storeDir := t.TempDir()
	blobs, err := blob.Open(ctx, "file://"+storeDir)
	require.NoError(t, err)
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "payload.txt"), []byte("echo pwned > /tmp/pwned\n"), 0o644))
	st, _, err := workspace.Import(ctx, blobs, "victim", workspace.Source{From: src}, workspace.Limits{}, time.Now())
	require.NoError(t, err)
	runs := runstore.New(blobs)

	forged := func(seq int64, mutate func(ws *runstore.WorkspaceState)) {
		ws := *st
		mutate(&ws)
		require.NoError(t, runs.Save(ctx, "victim", &runstore.Checkpoint{
			Seq: seq, Status: runstore.StatusCompleted, Workspace: &ws,
		}))
	}
	forged(1, func(ws *runstore.WorkspaceState) {})
	forged(2, func(ws *runstore.WorkspaceState) { ws.Commit = "--output=.bashrc" })
	forged(3, func(ws *runstore.WorkspaceState) { ws.Base = "--output=.bashrc" })

	for _, args := range [][]string{
		{"workspace", "victim", "diff", "--at", "3"},
		{"workspace", "victim", "diff", "--at", "1", "--from", "2"},
		{"workspace", "victim", "log", "--at", "2"},
	} {
		cwd := t.TempDir()
		cmd := exec.Command(bin, args...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), "TETHER_BLOB_URL=file://"+storeDir, "TETHER_STORE_RETRY=0")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "tether %v must fail: %s", args, out)
		assert.Equal(t, 1, exit.ExitCode(), "%s", out)
		assert.Contains(t, string(out), "is not a git object id", "tether %v", args)
		assert.NoFileExists(t, filepath.Join(cwd, ".bashrc"), "tether %v let git write a file: %s", args, out)
		entries, err := os.ReadDir(cwd)
		require.NoError(t, err)
		assert.Empty(t, entries, "tether %v wrote into the current directory", args)
	}

	// The genuine checkpoint still reads.
	cmd := exec.Command(bin, "workspace", "victim", "log", "--at", "1")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TETHER_BLOB_URL=file://"+storeDir, "TETHER_STORE_RETRY=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "payload.txt", "%s", out)
}

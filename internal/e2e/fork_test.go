package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// TestForkBringsTheFilesAndWorkspaceAt: `tether workspace --at SEQ` shows
// the files as checkpoint SEQ recorded them, and `tether fork --at SEQ`
// starts a run on those files: its first visit, on a worker that never
// saw either run, reads them. The fork's files are a copy of its own,
// still there once the source run is deleted.
func TestForkBringsTheFilesAndWorkspaceAt(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Unavailable(t, "git is not installed")
	}
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	fresh := h.freshWorkerPerVisit()
	g := testGraph(t, "ws-loop")
	id := "ws-fork-src"
	run := h.start(id, g, nil)
	h.answer(id, h.waitQuestion(id).ID, "revise")
	h.answer(id, h.waitQuestion(id).ID, "approve")
	_, err := h.result(run)
	require.NoError(t, err)

	// The checkpoint that committed writer visit 1 is the one whose
	// cursor is the tool.
	var afterFirst int64
	cps, err := h.runs.List(context.Background(), id)
	require.NoError(t, err)
	for _, info := range cps {
		cp, err := h.runs.Get(context.Background(), id, info.Seq)
		require.NoError(t, err)
		if len(cp.Cursor) == 1 && cp.Cursor[0].Node == "check" && cp.Visits["writer"] == 1 {
			afterFirst = cp.Seq
		}
	}
	require.NotZero(t, afterFirst)
	at := fmt.Sprint(afterFirst)

	// workspace --at: the files, the log and the diff as of that checkpoint.
	old := filepath.Join(t.TempDir(), "old")
	h.tether(t, dir, "workspace", id, "export", old, "--at", at, "--no-history")
	assert.Equal(t, "draft 1", readFile(t, old, "notes.txt"))
	assert.Equal(t, "package a", readFile(t, old, "src/a.go"))
	assert.NoDirExists(t, filepath.Join(old, ".git"))
	latest := filepath.Join(t.TempDir(), "latest")
	h.tether(t, dir, "workspace", id, "export", latest)
	assert.Equal(t, "draft 2, after 1 earlier turn(s)", readFile(t, latest, "notes.txt"))
	assert.NoFileExists(t, filepath.Join(latest, "src", "a.go"))
	log := h.tether(t, dir, "workspace", id, "log", "--at", at)
	assert.Contains(t, log, "writer visit 1")
	assert.NotContains(t, log, "writer visit 2", "the log ends at the checkpoint's commit")
	diff := h.tether(t, dir, "workspace", id, "diff", "--from", at)
	assert.Contains(t, diff, "-draft 1")
	assert.Contains(t, diff, "+draft 2, after 1 earlier turn(s)")
	assert.Contains(t, diff, "deleted file mode", "src/a.go went in visit 2")

	// fork --at: the fork's first visit is the tool, on a fresh worker.
	before := fresh.Visits()
	out := h.tether(t, dir, "fork", id, "--at", at, "--id", "ws-fork")
	require.Contains(t, out, "forked from "+id)
	q := h.waitQuestion("ws-fork")
	st := h.state("ws-fork")
	check := fmt.Sprint(st.Outputs["check"]["stdout"])
	assert.Contains(t, check, "draft 1", "the fork's tool read the files of the checkpoint it forked")
	assert.NotContains(t, check, "draft 2")
	assert.Contains(t, check, "a.go")
	assert.Greater(t, fresh.Visits(), before, "the fork's visit ran on a worker of its own")
	h.answer("ws-fork", q.ID, "approve")
	_, err = h.result(h.c.GetWorkflow(context.Background(), "ws-fork", ""))
	require.NoError(t, err)

	// The source run goes; the fork's files stay, with their history.
	h.tether(t, dir, "delete", id)
	forked := filepath.Join(t.TempDir(), "forked")
	h.tether(t, dir, "workspace", "ws-fork", "export", forked)
	assert.Equal(t, "draft 1", readFile(t, forked, "notes.txt"))
	assert.Equal(t, "package a", readFile(t, forked, "src/a.go"))
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	require.NoError(t, err)
	return string(b)
}

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// TestWorkspaceTravelsWithTheRun: every visit of a writer → tool → human
// loop runs on a new worker with empty roots; the tool always reads what
// the writer wrote, the writer continues its conversation, and the run's
// history holds one commit per visit that changed the files.
func TestWorkspaceTravelsWithTheRun(t *testing.T) {
	for _, store := range []string{"fs", "s3"} {
		t.Run(store, func(t *testing.T) {
			dir := t.TempDir()
			url := "file://" + dir
			if store == "s3" {
				url = s3Store(t, "ws")
			}
			h := newHarness(t, url)
			fresh := h.freshWorkerPerVisit()
			g := testGraph(t, "ws-loop")
			id := "ws-" + store
			run := h.start(id, g, nil)
			for round := 1; round <= 3; round++ {
				q := h.waitQuestion(id)
				st := h.state(id)
				check := fmt.Sprint(st.Outputs["check"]["stdout"])
				require.Contains(t, check, fmt.Sprintf("draft %d", round), "the tool read the writer's files on another worker")
				if round == 1 {
					require.Contains(t, check, "a.go")
				} else {
					require.NotContains(t, check, "a.go", "a deleted file stays deleted")
					require.Contains(t, check, fmt.Sprintf("after %d earlier turn(s)", round-1), "the writer continued its own conversation")
				}
				h.reviseUntil(id, q.ID, round, 3)
			}
			_, err := h.result(run)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, fresh.Visits(), 6, "each agent and tool visit had a worker of its own")
			if store == "fs" {
				h.recordHistory("workspace-loop", id)
			}

			// One commit per visit that changed the files, in plain git.
			h.useCLI(t)
			if _, err := exec.LookPath("git"); err != nil {
				testenv.Unavailable(t, "git is not installed")
			}
			code, log := tetherCode(t, "workspace", id, "log")
			require.Equal(t, 0, code, log)
			subjects := regexp.MustCompile(`(?m)^    (writer visit \d)$`).FindAllStringSubmatch(log, -1)
			var got []string
			for _, s := range subjects {
				got = append(got, s[1])
			}
			assert.Equal(t, []string{"writer visit 3", "writer visit 2", "writer visit 1"}, got, log)
			code, diff := tetherCode(t, "workspace", id, "diff")
			require.Equal(t, 0, code, diff)
			assert.Contains(t, diff, "+draft 3, after 2 earlier turn(s)")

			out := filepath.Join(t.TempDir(), "out")
			code, msg := tetherCode(t, "workspace", id, "export", out)
			require.Equal(t, 0, code, msg)
			notes, err := os.ReadFile(filepath.Join(out, "notes.txt"))
			require.NoError(t, err)
			assert.Equal(t, "draft 3, after 2 earlier turn(s)", string(notes))
			status, err := exec.Command("git", "-C", out, "status", "--porcelain").CombinedOutput()
			require.NoError(t, err, "%s", status)
			assert.Empty(t, strings.TrimSpace(string(status)), "the export is a clean checkout of its history")
			gitLog, err := exec.Command("git", "-C", out, "log", "--format=%s").CombinedOutput()
			require.NoError(t, err, "%s", gitLog)
			assert.Equal(t, "writer visit 3\nwriter visit 2\nwriter visit 1\n", string(gitLog))
		})
	}
}

// TestRewindRestoresFilesAndConversation: `tether rewind` to the checkpoint
// after the writer's first visit brings back that visit's files and its
// conversation together: on workers that never saw either, and on the one
// worker whose live files and session are those of the later, abandoned
// visits.
func TestRewindRestoresFilesAndConversation(t *testing.T) {
	for _, mode := range []string{"fresh-workers", "stale-worker"} {
		t.Run(mode, func(t *testing.T) { rewindRun(t, mode) })
	}
}

func rewindRun(t *testing.T, mode string) {
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	if mode == "fresh-workers" {
		h.freshWorkerPerVisit()
	} else {
		h.startWorker()
	}
	g := testGraph(t, "ws-loop")
	id := "ws-rewind-" + mode
	run := h.start(id, g, nil)
	var afterFirst int64
	for round := 1; round <= 3; round++ {
		q := h.waitQuestion(id)
		if round == 1 {
			cps, err := h.runs.List(context.Background(), id)
			require.NoError(t, err)
			// The checkpoint that committed writer visit 1 is the one
			// whose cursor is the tool.
			for _, info := range cps {
				cp, err := h.runs.Get(context.Background(), id, info.Seq)
				require.NoError(t, err)
				if len(cp.Cursor) == 1 && cp.Cursor[0].Node == "check" {
					afterFirst = cp.Seq
				}
			}
		}
		h.reviseUntil(id, q.ID, round, 3)
	}
	_, err := h.result(run)
	require.NoError(t, err)
	require.NotZero(t, afterFirst)

	out := h.tether(t, dir, "rewind", id, "--to", fmt.Sprint(afterFirst))
	require.Contains(t, out, "rewound")
	// The tool runs again first: it must see draft 1 and src/a.go, which
	// the later visits had changed and deleted.
	q := h.waitQuestion(id)
	st := h.state(id)
	check := fmt.Sprint(st.Outputs["check"]["stdout"])
	require.Contains(t, check, "draft 1")
	require.Contains(t, check, "a.go")
	h.answer(id, q.ID, "revise")
	// The writer's next visit is its second turn: the conversation of
	// visit 1, not of the abandoned visits 2 and 3.
	q = h.waitQuestion(id)
	st = h.state(id)
	assert.Contains(t, fmt.Sprint(st.Outputs["writer"]["text"]), "turn 2: wrote draft 2")
	assert.Contains(t, fmt.Sprint(st.Outputs["check"]["stdout"]), "draft 2, after 1 earlier turn(s)")
	h.answer(id, q.ID, "approve")
	_, err = h.result(h.c.GetWorkflow(context.Background(), id, ""))
	require.NoError(t, err)
}

// gitRepo makes a repository whose tag v1 has VERSION=1 and whose working
// tree has moved on.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Unavailable(t, "git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "VERSION"), []byte("1\n"), 0o644))
	git("add", "VERSION")
	git("commit", "-qm", "v1")
	git("tag", "v1")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "VERSION"), []byte("2 (uncommitted)\n"), 0o644))
	return dir
}

// TestWorkspaceFromARepository: a graph names its workspace as a
// repository and a ref, from its inputs. Started with the plain Temporal
// client, the workflow imports it on a worker; started with `tether run`,
// the CLI imports it. Either way the run sees the ref's files, never .git.
func TestWorkspaceFromARepository(t *testing.T) {
	repo := gitRepo(t)
	h, dir := fileHarness(t)
	g := parseGraph(t, graphYAML(t, "ws-import"), "import.yaml")

	res, err := h.result(h.start("ws-import", g, map[string]any{"repo": repo}))
	require.NoError(t, err)
	seen := fmt.Sprint(res.Output["seen"])
	assert.Contains(t, seen, "1\n")
	assert.NotContains(t, seen, "uncommitted")
	assert.NotContains(t, seen, ".git")
	h.recordHistory("workspace-import", "ws-import")

	graphFile := graphFile(t, "ws-import")
	out := h.tether(t, dir, "run", graphFile, "--id", "ws-import-cli", "--input", "repo="+repo, "--follow")
	assert.Contains(t, out, "workspace from "+repo+"@v1: 1 files")
	st := h.state("ws-import-cli")
	assert.Equal(t, "1", strings.TrimSpace(strings.Split(fmt.Sprint(st.Outputs["look"]["stdout"]), "\n")[0]))
}

// TestFanOutBranchesSeeTheWorkspace: branches of a fan-out each run on a
// copy of the workspace as it was at the fan-out, on whatever worker; what
// a branch changes is not kept.
func TestFanOutBranchesSeeTheWorkspace(t *testing.T) {
	h := newHarness(t, "")
	h.freshWorkerPerVisit()
	g := testGraph(t, "ws-fanout")
	res, err := h.result(h.start("ws-fanout", g, nil))
	require.NoError(t, err)
	st := h.state("ws-fanout")
	assert.Contains(t, fmt.Sprint(st.Outputs["left"]["stdout"]), "hello")
	assert.Contains(t, fmt.Sprint(st.Outputs["right"]["stdout"]), "hello")
	files := fmt.Sprint(res.Output["files"])
	assert.Contains(t, files, "shared.txt")
	assert.NotContains(t, files, "left.txt", "a branch's changes are not kept")
}

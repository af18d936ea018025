package e2e

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/testenv"
)

// The task the test gives examples/fix-the-test.yaml's writer. Besides the
// words a user would write, it carries the fake model's file cues: on turn
// 1 of the writer's conversation a wrong fix (the tests still fail), on
// turn 2 the right one. The turn-2 cue is only in this first prompt, so the
// second visit makes the right fix only if it really continues the first
// visit's conversation.
const (
	fixTask = "Make `go test ./...` pass without changing the tests.\n" +
		"EDIT_FILE@1: stats/stats.go\nOLD:\n\treturn sum / float64(len(xs))\nNEW:\n\treturn sum / float64(len(xs)-1)\nEND_EDIT\n" +
		"EDIT_FILE@2: stats/stats.go\nOLD:\n\tfor i := 1; i < len(xs); i++ {\n\t\tsum += xs[i]\n\t}\n\treturn sum / float64(len(xs)-1)\n" +
		"NEW:\n\tfor _, x := range xs {\n\t\tsum += x\n\t}\n\treturn sum / float64(len(xs))\nEND_EDIT"
	// fixReview makes the reviewer approve: the fake model answers the
	// rest of its prompt after the cue, which the example puts last.
	fixReview = "Approve only a minimal fix of the cause.\n" +
		`REPLY: {"approved": true, "feedback": "the loop now sums every sample"}`
)

// TestFixTheTest runs examples/fix-the-test.yaml end to end on each real
// CLI against the fake model, every visit on a new worker with empty state,
// work and home directories, starting from a Go module whose test fails.
// The writer's first fix is wrong, `go test` says so, its second visit
// continues the same conversation and fixes the cause, the reviewer sees
// the change as a diff and approves, a person approves, and the exported
// workspace builds and passes its tests with the real Go toolchain.
func TestFixTheTest(t *testing.T) {
	for _, b := range clitest.CLIBackends(true) {
		t.Run(b, func(t *testing.T) {
			fixTheTest(t, b, "fs")
		})
	}
}

// TestFixTheTestOnS3 is the same run with the blob and run store on a real
// S3 server, on the cheapest CLI.
func TestFixTheTestOnS3(t *testing.T) {
	fixTheTest(t, "codex", "s3")
}

func fixTheTest(t *testing.T, b, store string) {
	started := time.Now()
	h, fresh, fake, _ := exampleHarness(t, store, "fix")
	goEnv := goCaches(t)
	// The example as shipped, on backend b.
	file := exampleOn(t, "fix-the-test.yaml", b)
	code, out := tetherCode(t, "validate", file)
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "warning", "the example is clean on %s", b)

	repo := filepath.Join(testenv.Root(), "internal", "e2e", "testdata", "fixthetest")
	id := "fix-" + strings.ReplaceAll(b, "_", "-") + "-" + store
	code, out = tetherCode(t, "run", file, "--id", id, "--workspace", repo, "--heartbeat-timeout", "5s",
		"--input", "task="+fixTask, "--input", "review="+fixReview)
	require.Equal(t, 0, code, out)

	q := h.waitQuestion(id)
	require.Equal(t, "approve-1", q.ID, "the run reached the human approval")
	assert.Contains(t, q.Text, "the loop now sums every sample")
	h.answer(id, q.ID, "approve")
	res, err := h.result(h.c.GetWorkflow(t.Context(), id, ""))
	require.NoError(t, err)
	require.Equal(t, "writer>tests>writer>tests>review>approve>done", pathString(res))
	assert.GreaterOrEqual(t, fresh.Visits(), 5, "each agent and tool visit had a worker of its own")

	// What the fake model was asked: the writer's second visit continued
	// its first conversation and saw the failing tests; the reviewer saw
	// the writer's change as a diff.
	writer := conversationTurns(fake, "EDIT_FILE@2")
	require.NotEmpty(t, writer)
	last := writer[len(writer)-1]
	require.Len(t, last.Prompts, 2, "the writer's second visit is turn 2 of its conversation")
	assert.Contains(t, last.Prompts[1], "still fails")
	// The oracle, on a worker of its own, ran the code the writer's wrong
	// fix left: the mean of one sample divides by zero.
	assert.Contains(t, last.Prompts[1], "--- FAIL: TestMean")
	assert.Contains(t, last.Prompts[1], "Mean([5]) = NaN, want 5")
	review := conversationTurns(fake, "Review the whole change")
	require.Len(t, review, 1, "one review, answered at once")
	diff := review[0].Prompts[0]
	for _, line := range []string{"--- a/stats/stats.go", "+++ b/stats/stats.go",
		"-\tfor i := 1; i < len(xs); i++ {", "-\t\tsum += xs[i]", "+\tfor _, x := range xs {", "+\t\tsum += x"} {
		assert.Contains(t, diff, line, "the reviewer's prompt holds the writer's change as a diff")
	}
	assert.NotContains(t, diff, "len(xs)-1", "the diff is the run's whole change: the wrong fix came and went")

	// The run's history: one commit per writer visit, none for the tool or
	// the read-only reviewer.
	code, log := tetherCode(t, "workspace", id, "log")
	require.Equal(t, 0, code, log)
	var subjects []string
	for _, m := range regexp.MustCompile(`(?m)^    (\S+ visit \d+.*)$`).FindAllStringSubmatch(log, -1) {
		subjects = append(subjects, m[1])
	}
	assert.Equal(t, []string{"writer visit 2", "writer visit 1"}, subjects, log)

	// The export is a git repository whose code builds and passes its
	// tests, with the tests as they were.
	dir := filepath.Join(t.TempDir(), "fixed")
	code, out = tetherCode(t, "workspace", id, "export", dir)
	require.Equal(t, 0, code, out)
	for _, args := range [][]string{{"build", "./..."}, {"test", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), goEnv...)
		o, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %v in the export: %s", args, o)
	}
	want, err := os.ReadFile(filepath.Join(repo, "stats", "stats_test.go"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(dir, "stats", "stats_test.go"))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "the tests were not changed")
	gitLog, err := exec.Command("git", "-C", dir, "log", "--format=%s").CombinedOutput()
	require.NoError(t, err, "%s", gitLog)
	assert.Equal(t, "writer visit 2\nwriter visit 1\nworkspace from "+repo+"\n", string(gitLog))
	files, err := exec.Command("git", "-C", dir, "ls-files").CombinedOutput()
	require.NoError(t, err, "%s", files)
	assert.Equal(t, "go.mod\nstats/stats.go\nstats/stats_test.go\n", string(files), "no file of a CLI's own entered the workspace")
	first, err := exec.Command("git", "-C", dir, "show", "--format=", "HEAD~1").CombinedOutput()
	require.NoError(t, err, "%s", first)
	assert.Contains(t, string(first), "+\treturn sum / float64(len(xs)-1)", "writer visit 1 committed the wrong fix")

	// No CLI wrote under the test process's HOME: each worker gave its CLIs
	// a home of its own (only the go commands' telemetry lands here).
	assert.Empty(t, filesUnder(t, os.Getenv("HOME"), ".config/go"), "files an agent CLI wrote in the shared HOME")
	if b == "claude_code" {
		var homes []string
		for _, root := range fresh.Roots {
			homes = append(homes, filesUnder(t, filepath.Join(root, "home"), "")...)
		}
		assert.NotEmpty(t, homes, "Claude Code keeps logs under HOME: in the workers' own homes")
	}
	t.Logf("%s on %s: %d visits on fresh workers in %s", b, store, fresh.Visits(), time.Since(started).Round(time.Second))
}

// conversationTurns are the conversation requests whose first prompt
// contains marker, oldest first.
func conversationTurns(f *fakemodel.Server, marker string) []fakemodel.Request {
	var out []fakemodel.Request
	for _, r := range f.Turns() {
		if len(r.Prompts) > 0 && strings.Contains(r.Prompts[0], marker) {
			out = append(out, r)
		}
	}
	return out
}

// startEnv is the environment before any test changed HOME: where the go
// command finds the machine's caches.
var startEnv = os.Environ()

// goCaches are the machine's Go build and module caches, an offline module
// proxy and the local toolchain, as NAME=value. The test passes them to the
// tool oracle (its node names these variables in env): the test's HOME is
// fresh, and a cold cache there would rebuild the standard library on
// every visit.
func goCaches(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		testenv.Unavailable(t, "the go command is not installed")
	}
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Unavailable(t, "git is not installed")
	}
	cmd := exec.Command("go", "env", "GOCACHE", "GOMODCACHE")
	cmd.Env = startEnv
	out, err := cmd.Output()
	require.NoError(t, err)
	dirs := strings.Fields(string(out))
	require.Len(t, dirs, 2, "go env: %s", out)
	return []string{"GOCACHE=" + dirs[0], "GOMODCACHE=" + dirs[1], "GOPROXY=off", "GOTOOLCHAIN=local"}
}

// filesUnder lists the files under dir, relative to it, except those in
// the subdirectory skip.
func filesUnder(t *testing.T, dir, skip string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == skip:
			return filepath.SkipDir
		case !d.IsDir():
			out = append(out, rel)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

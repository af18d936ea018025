package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/testenv"
)

// The fake model's file cues for examples/best-of-three.yaml, one per
// attempt (its *_approach inputs): Claude Code makes the minimal fix, Codex
// a right but larger one, pi a wrong one whose tests still fail.
const (
	minimalFix = "Make the smallest change that fixes the cause.\n" +
		"EDIT_FILE: stats/stats.go\nOLD:\n\tfor i := 1; i < len(xs); i++ {\n\t\tsum += xs[i]\n\t}\nNEW:\n\tfor _, x := range xs {\n\t\tsum += x\n\t}\nEND_EDIT"
	largerFix = "Fix the cause; simplify the code around it.\n" +
		"EDIT_FILE: stats/stats.go\nOLD:\n\tvar sum float64\n\tfor i := 1; i < len(xs); i++ {\n\t\tsum += xs[i]\n\t}\n\treturn sum / float64(len(xs))\n" +
		"NEW:\n\t// Every sample counts, the first one too.\n\tsum := 0.0\n\tfor i := 0; i < len(xs); i++ {\n\t\tsum = sum + xs[i]\n\t}\n\tmean := sum / float64(len(xs))\n\treturn mean\nEND_EDIT"
	wrongFix = "Fix it as you see fit.\n" +
		"EDIT_FILE: stats/stats.go\nOLD:\n\treturn sum / float64(len(xs))\nNEW:\n\treturn sum / float64(len(xs)-1)\nEND_EDIT"
)

// TestBestOfThree runs examples/best-of-three.yaml as shipped: the same
// task to Claude Code, Codex and pi at once, each attempt on its own branch
// of the workspace and every visit on a worker of its own with empty
// disks. pi's attempt fails its tests; the join keeps the passing attempt
// with the smallest change (Claude Code's), a person approves it, and the
// export is that attempt's code. On a file store and on S3.
func TestBestOfThree(t *testing.T) {
	for _, store := range []string{"fs", "s3"} {
		t.Run(store, func(t *testing.T) { bestOfThree(t, store) })
	}
}

func bestOfThree(t *testing.T, store string) {
	started := time.Now()
	h, fresh, fake, url := exampleHarness(t, store, "best")
	file := filepath.Join(testenv.Root(), "examples", "best-of-three.yaml")
	code, out := tetherCode(t, "validate", file)
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "warning")

	repo := filepath.Join(testenv.Root(), "internal", "e2e", "testdata", "fixthetest")
	id := "best-of-three-" + store
	code, out = tetherCode(t, "run", file, "--id", id, "--workspace", repo, "--heartbeat-timeout", "5s",
		"--input", "claude_approach="+minimalFix, "--input", "codex_approach="+largerFix, "--input", "pi_approach="+wrongFix)
	require.Equal(t, 0, code, out)

	q := h.waitQuestion(id)
	require.Equal(t, "approve-1", q.ID)
	assert.Contains(t, q.Text, "The claude attempt passes the tests with the smallest change")
	h.answer(id, q.ID, "approve")
	res, err := h.result(h.c.GetWorkflow(t.Context(), id, ""))
	require.NoError(t, err)
	assert.Equal(t, "done", res.EndNode)
	assert.GreaterOrEqual(t, fresh.Visits(), 7, "each agent and tool visit had a worker of its own")

	st := h.state(id)
	for node, exit := range map[string]float64{"claude_tests": 0, "codex_tests": 0, "pi_tests": 1} {
		assert.Equal(t, exit, st.Outputs[node]["exit_code"], "%s: %v", node, st.Outputs[node]["stdout"])
	}
	ws := st.Outputs["best"]["workspace"].(map[string]any)
	assert.Equal(t, "claude", ws["kept"])
	lines := map[string]float64{}
	for _, b := range ws["branches"].([]any) {
		m := b.(map[string]any)
		lines[m["name"].(string)] = m["lines"].(float64)
	}
	assert.Equal(t, 4.0, lines["claude"], "claude's fix: two lines out, two in")
	assert.Greater(t, lines["codex"], lines["claude"])
	assert.Equal(t, 2.0, lines["pi"])

	// Each attempt reached the model through its own CLI, with the failing
	// tests in its prompt.
	for _, marker := range []string{minimalFix, largerFix, wrongFix} {
		turns := conversationTurns(fake, strings.SplitN(marker, "\n", 2)[0])
		require.NotEmpty(t, turns, "no conversation for %q", marker)
		assert.Contains(t, turns[0].Prompts[0], "--- FAIL: TestMean")
	}

	// The history has every attempt; the export is the kept one's code,
	// and it passes its tests.
	code, log := tetherCode(t, "workspace", id, "log", "--all")
	require.Equal(t, 0, code, log)
	for _, want := range []string{"best-1/claude", "best-1/codex", "best-1/pi", "claude visit 1", "codex visit 1", "pi visit 1",
		"backend: claude_code", "backend: codex", "backend: pi"} {
		assert.Contains(t, log, want)
	}
	code, diff := tetherCode(t, "workspace", id, "diff", "--branch", "pi")
	require.Equal(t, 0, code, diff)
	assert.Contains(t, diff, "+\treturn sum / float64(len(xs)-1)")
	dir := filepath.Join(t.TempDir(), "kept")
	code, out = tetherCode(t, "workspace", id, "export", dir)
	require.Equal(t, 0, code, out)
	got, err := os.ReadFile(filepath.Join(dir, "stats", "stats.go"))
	require.NoError(t, err)
	assert.Contains(t, string(got), "\tfor _, x := range xs {\n\t\tsum += x\n\t}\n")
	goTest(t, dir)
	t.Logf("best-of-three on %s (%s): %d visits on fresh workers in %s", store, url, fresh.Visits(), time.Since(started).Round(time.Second))
}

// The planner's answer for examples/split-and-merge.yaml: two parts that
// touch different files, or (conflict) three, two of which change the
// same lines of calc/mean.go differently.
const (
	meanPart  = `Fix Mean in calc/mean.go.\nEDIT_FILE: calc/mean.go\nOLD:\n\tfor i := 1; i < len(xs); i++ {\nNEW:\n\tfor i := 0; i < len(xs); i++ {\nEND_EDIT`
	maxPart   = `Fix Max in calc/max.go.\nEDIT_FILE: calc/max.go\nOLD:\n\t\tif x < m {\nNEW:\n\t\tif x > m {\nEND_EDIT`
	meanPart2 = `Fix the loop of Mean in calc/mean.go.\nEDIT_FILE: calc/mean.go\nOLD:\n\tfor i := 1; i < len(xs); i++ {\n\t\tsum += xs[i]\n\t}\nNEW:\n\tfor _, x := range xs {\n\t\tsum += x\n\t}\nEND_EDIT`
	// resolvedMean is what the resolver writes over the conflict.
	resolvedMean = "Keep what each part meant to do.\nWRITE_FILE: calc/mean.go\n// Package calc summarises samples of numbers.\npackage calc\n\n" +
		"// Mean returns the arithmetic mean of xs, or 0 when xs is empty.\nfunc Mean(xs []float64) float64 {\n\tif len(xs) == 0 {\n\t\treturn 0\n\t}\n" +
		"\tvar sum float64\n\tfor _, x := range xs {\n\t\tsum += x\n\t}\n\treturn sum / float64(len(xs))\n}\nEND_FILE"
)

// TestSplitAndMerge runs examples/split-and-merge.yaml on each CLI: the
// planner cuts the fix into parts, the writers edit different files at
// once on their own branches (every visit on a fresh worker), the join
// merges them and `go test` passes. The conflict variant has two writers
// change the same lines: the merge routes to the resolver, which sees each
// part's diff and settles the file. The conflict variant runs on S3.
func TestSplitAndMerge(t *testing.T) {
	for _, b := range []string{"claude_code", "codex", "pi"} {
		t.Run(b, func(t *testing.T) {
			t.Run("clean", func(t *testing.T) { splitAndMerge(t, b, "fs", false) })
			t.Run("conflict", func(t *testing.T) { splitAndMerge(t, b, "s3", true) })
		})
	}
}

func splitAndMerge(t *testing.T, b, store string, conflict bool) {
	started := time.Now()
	h, fresh, fake, _ := exampleHarness(t, store, "split")
	file := exampleOn(t, "split-and-merge.yaml", b)

	parts := `["` + meanPart + `", "` + maxPart + `"]`
	if conflict {
		parts = `["` + meanPart + `", "` + meanPart2 + `", "` + maxPart + `"]`
	}
	task := "Make `go test ./...` pass without changing the tests.\nREPLY: {\"parts\": " + parts + "}"
	repo := filepath.Join(testenv.Root(), "internal", "e2e", "testdata", "splitmerge")
	id := fmt.Sprintf("split-%s-%t", strings.ReplaceAll(b, "_", "-"), conflict)
	code, out := tetherCode(t, "run", file, "--id", id, "--workspace", repo, "--heartbeat-timeout", "5s",
		"--input", "task="+task, "--input", "resolve="+resolvedMean)
	require.Equal(t, 0, code, out)
	res, err := h.result(h.c.GetWorkflow(t.Context(), id, ""))
	require.NoError(t, err)
	require.Equal(t, "done", res.EndNode, "the merged code passes its tests")

	st := h.state(id)
	ws := st.Outputs["merge"]["workspace"].(map[string]any)
	conflicts := ws["conflicts"].([]any)
	if !conflict {
		assert.Empty(t, conflicts)
		assert.NotContains(t, pathString(res), "resolver")
		assert.GreaterOrEqual(t, fresh.Visits(), 4)
	} else {
		require.Len(t, conflicts, 1)
		c := conflicts[0].(map[string]any)
		assert.Equal(t, "calc/mean.go", c["path"])
		assert.Equal(t, []any{"part1", "part2"}, c["branches"])
		assert.Contains(t, pathString(res), "resolver")
		// The resolver saw the conflict and each part's change as a diff.
		turns := conversationTurns(fake, "their work conflicted")
		require.NotEmpty(t, turns, "the resolver reached the model")
		p := turns[0].Prompts[0]
		for _, want := range []string{"- calc/mean.go (parts part1, part2)", "## branch part1", "## branch part2", "## branch part3",
			"+\tfor i := 0; i < len(xs); i++ {", "+\tfor _, x := range xs {", "+\t\tif x > m {"} {
			assert.Contains(t, p, want)
		}
	}

	dir := filepath.Join(t.TempDir(), "merged")
	code, out = tetherCode(t, "workspace", id, "export", dir)
	require.Equal(t, 0, code, out)
	goTest(t, dir)
	subjects, err := exec.Command("git", "-C", dir, "log", "--format=%s", "--first-parent").CombinedOutput()
	require.NoError(t, err, "%s", subjects)
	want := "merge merge 1\nworkspace from " + repo + "\n"
	if conflict {
		want = "resolver visit 1\n" + want
	}
	assert.Equal(t, want, string(subjects))
	parents, err := exec.Command("git", "-C", dir, "log", "-1", "--format=%P", "--grep=^merge merge 1").CombinedOutput()
	require.NoError(t, err, "%s", parents)
	n := 3
	if conflict {
		n = 4
	}
	assert.Len(t, strings.Fields(string(parents)), n, "the merge commit has the trunk and every part as parents")
	t.Logf("split-and-merge on %s (%s, conflict %t): %d visits on fresh workers in %s", b, store, conflict, fresh.Visits(), time.Since(started).Round(time.Second))
}

// exampleHarness is a harness for an example run through the tether CLI:
// the real CLIs against the fake model, a fresh worker for every visit,
// the store on a file system or S3 (in bucket).
func exampleHarness(t *testing.T, store, bucket string) (*harness, *freshWorkers, *fakemodel.Server, string) {
	goEnv := goCaches(t)
	url := "file://" + t.TempDir()
	if store == "s3" {
		url = s3Store(t, bucket)
	}
	h := newHarness(t, url)
	fake := cliBackends(t, h)
	// As a production worker runs them: the agents edit and the oracle's
	// `go test` builds inside the sandbox, with the Go caches its node's
	// env names.
	h.confine()
	fresh := h.freshWorkerPerVisit()
	t.Setenv("TEMPORAL_ADDRESS", h.srv.Address)
	t.Setenv("TETHER_BLOB_URL", url)
	// Set only now that every real program is up: GOPROXY=off would stop a
	// cold build of one.
	for _, kv := range goEnv {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	return h, fresh, fake, url
}

// exampleOn writes examples/name with its agents on backend b (the word
// after &agent, claude_code as shipped) and returns the copy's path.
func exampleOn(t *testing.T, name, b string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(testenv.Root(), "examples", name))
	require.NoError(t, err)
	require.Contains(t, string(src), "&agent claude_code")
	file := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(src), "&agent claude_code", "&agent "+b, 1)), 0o644))
	return file
}

// goTest runs `go test ./...` in dir with the machine's caches.
func goTest(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), goCaches(t)...)
	o, err := cmd.CombinedOutput()
	require.NoError(t, err, "go test in %s: %s", dir, o)
}

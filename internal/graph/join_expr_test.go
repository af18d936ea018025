package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func branchEnv() BranchEnv {
	return BranchEnv{
		Branch: "fix_a",
		Outputs: map[string]map[string]any{
			"fix_a":  {"text": "done", "score": 7.5},
			"test_a": {"exit_code": 0, "stdout": "ok"},
		},
		Diff: DiffStat{Files: 2, Added: 10, Removed: 3, Lines: 13},
	}
}

func TestEvalPick(t *testing.T) {
	cases := []struct {
		pick string
		want bool
	}{
		{"outputs.test_a.exit_code == 0", true},
		{"outputs.test_a.exit_code != 0", false},
		{"branch == 'fix_a'", true},
		{"diff.files == 2 && diff.added == 10 && diff.removed == 3 && diff.lines == 13", true},
		{"diff.lines < 10", false},
		{"outputs.fix_a.score >= 7", true},
		// A node the branch never visited reads as nil: nil == 0 is false.
		{"outputs.tests.exit_code == 0", false},
		{"outputs.tests.exit_code != 0", true},
		{"(outputs.tests.exit_code ?? 1) == 0", false},
		{"outputs.tests == nil", true},
		{"outputs[branch].text == 'done'", true},
		{"'test_a' in outputs", true},
	}
	for _, c := range cases {
		t.Run(c.pick, func(t *testing.T) {
			got, err := EvalPick(c.pick, branchEnv())
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
	// A branch with no outputs at all does not panic either.
	got, err := EvalPick("outputs.tests.exit_code == 0", BranchEnv{Branch: "b"})
	require.NoError(t, err)
	assert.False(t, got)
}

func TestEvalPickErrors(t *testing.T) {
	_, err := EvalPick("outputs.test_a.stdout", branchEnv())
	assert.ErrorContains(t, err, "gave ok (string) for branch fix_a, not a boolean")

	_, err = CompilePick("diff.lines")
	assert.ErrorContains(t, err, "a pick must be a boolean, and this gives a int")

	_, err = CompilePick("output.exit_code == 0")
	assert.ErrorContains(t, err, "unknown name output")

	_, err = CompilePick("diff.size > 0")
	assert.ErrorContains(t, err, "size")

	_, err = CompilePick("  ")
	assert.ErrorContains(t, err, "the pick expression is empty")

	_, err = CompilePick("now() != nil")
	assert.ErrorContains(t, err, "unknown name now")

	_, err = CompilePick("len(keys(outputs)) > 0")
	assert.ErrorContains(t, err, "unknown name keys")
}

func TestEvalBy(t *testing.T) {
	cases := []struct {
		by   string
		want float64
	}{
		{"diff.lines", 13},
		{"diff.files * 100 + diff.lines", 213},
		{"outputs.fix_a.score", 7.5},
		{"-outputs.fix_a.score", -7.5},
		{"outputs.test_a.exit_code", 0},
		{"outputs.tests.exit_code ?? 99", 99},
		{"diff.lines / 2", 6.5},
	}
	for _, c := range cases {
		t.Run(c.by, func(t *testing.T) {
			got, err := EvalBy(c.by, branchEnv())
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestEvalByErrors(t *testing.T) {
	_, err := EvalBy("outputs.test_a.stdout", branchEnv())
	assert.ErrorContains(t, err, `by "outputs.test_a.stdout" gave ok (string) for branch fix_a, not a number`)

	_, err = EvalBy("outputs.tests.exit_code", branchEnv())
	assert.ErrorContains(t, err, "gave nil for branch fix_a")
	assert.ErrorContains(t, err, "?? 0")

	_, err = CompileBy("branch")
	assert.ErrorContains(t, err, "a by must be a number, and this gives a string")

	_, err = CompileBy("diff.lines > 3")
	assert.ErrorContains(t, err, "a by must be a number, and this gives a bool")
}

func TestBranchProgramsKeepToTheirKind(t *testing.T) {
	pick, err := CompilePick("diff.lines > 0")
	require.NoError(t, err)
	_, err = pick.EvalBy(branchEnv())
	assert.ErrorContains(t, err, "was not compiled as a by")
	_, err = pick.Eval(Env{})
	assert.ErrorContains(t, err, "reads a branch")
	ok, err := pick.EvalPick(branchEnv())
	require.NoError(t, err)
	assert.True(t, ok)

	when, err := CompileWhen("visits > 0")
	require.NoError(t, err)
	_, err = when.EvalPick(branchEnv())
	assert.ErrorContains(t, err, "was not compiled as a pick")
}

func TestEvalPickIsDeterministic(t *testing.T) {
	env := branchEnv()
	for range 50 {
		got, err := EvalBy("len(toJSON(outputs)) + diff.lines", env)
		require.NoError(t, err)
		first, _ := EvalBy("len(toJSON(outputs)) + diff.lines", env)
		assert.Equal(t, first, got)
	}
}

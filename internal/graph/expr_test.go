package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEvalWhen(t *testing.T) {
	env := Env{
		Output: map[string]any{"approved": false, "feedback": "tighten the intro", "code": 0, "tags": []any{"a", "b"}},
		Input:  map[string]any{"topic": "x", "limit": 3},
		Visits: 2,
	}
	cases := []struct {
		when string
		want bool
	}{
		{"", true},
		{"output.approved == true", false},
		{"output.approved != true", true},
		{"output.missing == true", false},
		{"output.missing != true", true},
		{"visits >= input.limit", false},
		{"visits < 3 && output.code == 0", true},
		{`output.feedback contains "intro"`, true},
		{`"b" in output.tags`, true},
		{"len(output.tags) == 2", true},
		{"output.missing?.deeper == nil", true},
		{"input.topic matches '^x$'", true},
		{"all(output.tags, # != 'c')", true},
	}
	for _, c := range cases {
		t.Run(c.when, func(t *testing.T) {
			got, err := EvalWhen(c.when, env)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestEvalWhenErrors(t *testing.T) {
	_, err := EvalWhen("output.feedback", Env{Output: map[string]any{"feedback": "x"}})
	assert.ErrorContains(t, err, "gave x (string), not a boolean")

	_, err = CompileWhen("visits + 1")
	assert.ErrorContains(t, err, "a when must be a boolean, and this gives a int")

	_, err = EvalWhen("not output.approved", Env{})
	assert.Error(t, err, "a missing key is nil, which not cannot negate")

	_, err = EvalWhen("outptu.approved", Env{})
	assert.ErrorContains(t, err, "unknown name outptu")

	_, err = EvalWhen("visits > 'a'", Env{})
	assert.ErrorContains(t, err, "invalid operation")
}

func TestDisabledBuiltinsAreRefused(t *testing.T) {
	for _, src := range []string{"now()", "date('2024-01-01')", "duration('1h')", "timezone('UTC')", "keys(output)", "values(output)", "toPairs(output)"} {
		t.Run(src, func(t *testing.T) {
			_, err := CompileValue(src)
			assert.ErrorContains(t, err, "unknown name")
			_, err = CompileWhen(src + " != nil")
			assert.ErrorContains(t, err, "unknown name")
		})
	}
	// Deterministic builtins stay available.
	for _, src := range []string{"sort(['b', 'a'])", "toJSON(output)", "upper('a')", "fromJSON('{\"a\": 1}')", "sum([1, 2])"} {
		_, err := CompileValue(src)
		assert.NoError(t, err, src)
	}
}

func TestEvalWith(t *testing.T) {
	env := Env{Output: map[string]any{"feedback": "tighten", "n": 2}, Input: map[string]any{"topic": "t"}, Visits: 1}
	lit := map[string]any{"deep": []any{1}}
	with := map[string]any{
		"feedback": "output.feedback",
		"text":     "'a literal'",
		"count":    3,
		"flag":     false,
		"nested":   lit,
		"sum":      "output.n + visits",
		"json":     "toJSON({'b': 1, 'a': 2})",
		"missing":  "output.nothing",
	}
	got, err := EvalWith(with, env)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"feedback": "tighten",
		"text":     "a literal",
		"count":    3,
		"flag":     false,
		"nested":   map[string]any{"deep": []any{1}},
		"sum":      3,
		"json":     "{\n  \"a\": 2,\n  \"b\": 1\n}",
		"missing":  nil,
	}, got)

	// Literals are copied: changing the result leaves the graph alone.
	got["nested"].(map[string]any)["deep"].([]any)[0] = 99
	assert.Equal(t, 1, lit["deep"].([]any)[0])

	empty, err := EvalWith(nil, env)
	require.NoError(t, err)
	assert.Nil(t, empty)
}

func TestEvalWithNamesTheFailingKey(t *testing.T) {
	_, err := EvalWith(map[string]any{"a": "output.x", "b": "output.(", "c": "output.("}, Env{})
	assert.ErrorContains(t, err, "with b:")
	_, err = EvalWith(map[string]any{"z": "output.x.y"}, Env{Output: map[string]any{}})
	assert.ErrorContains(t, err, "with z:")
}

func TestEvalIsDeterministic(t *testing.T) {
	env := Env{Output: map[string]any{"m": map[string]any{"b": 1, "a": 2, "c": 3}}}
	first, err := EvalWith(map[string]any{"j": "toJSON(output.m)", "s": "sort(['c', 'a', 'b'])"}, env)
	require.NoError(t, err)
	for range 50 {
		again, err := EvalWith(map[string]any{"j": "toJSON(output.m)", "s": "sort(['c', 'a', 'b'])"}, env)
		require.NoError(t, err)
		assert.Equal(t, first, again)
	}
}

func TestCompiledProgram(t *testing.T) {
	p, err := CompileWhen("visits > 1")
	require.NoError(t, err)
	assert.Equal(t, "visits > 1", p.Source())
	ok, err := p.EvalBool(Env{Visits: 2})
	require.NoError(t, err)
	assert.True(t, ok)

	v, err := CompileValue("input.a ?? 'default'")
	require.NoError(t, err)
	got, err := v.Eval(Env{})
	require.NoError(t, err)
	assert.Equal(t, "default", got)
	_, err = v.EvalBool(Env{})
	assert.ErrorContains(t, err, "not a boolean")
}

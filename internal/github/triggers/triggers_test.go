package triggers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/graph"
)

const good = `
graphs:
  fix: fix.yaml
triggers:
  - {repo: acme/widgets, label: tether, graph: fix, inputs: {budget: 3}}
  - {repo: acme/widgets, command: run}
`

func TestLoadAndMatch(t *testing.T) {
	tr, err := Parse([]byte(good), "testdata/triggers.yaml")
	require.NoError(t, err)
	assert.True(t, tr.Knows("ACME/widgets"))
	assert.False(t, tr.Knows("acme/other"))

	name, g, trig, ok := tr.ForLabel("acme/widgets", "Tether")
	require.True(t, ok)
	assert.Equal(t, "fix", name)
	in, err := Inputs(g, trig, &github.Issue{Number: 12, Title: "Broken", Body: "b", Author: "alice"}, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"issue": 12, "title": "Broken", "budget": 3}, in, "the issue's inputs the graph declares, and the trigger's")
	_, _, _, ok = tr.ForLabel("acme/widgets", "bug")
	assert.False(t, ok)

	g, trig, err = tr.ForCommand("acme/widgets", "fix")
	require.NoError(t, err)
	in, err = Inputs(g, trig, &github.Issue{Number: 3, Title: "t"}, map[string]string{"budget": "5"})
	require.NoError(t, err)
	assert.Equal(t, 5.0, in["budget"], "a comment's key=value, read by the input's type")
	_, err = Inputs(g, trig, &github.Issue{Number: 3}, map[string]string{"budget": "lots"})
	assert.ErrorIs(t, err, graph.ErrInputs)
	_, err = Inputs(g, trig, &github.Issue{Number: 3}, map[string]string{"nope": "1"})
	assert.ErrorContains(t, err, "has no input nope")
	_, _, err = tr.ForCommand("acme/widgets", "other")
	assert.ErrorIs(t, err, ErrNoTrigger)
	assert.ErrorContains(t, err, "the graphs are fix")
	_, _, err = tr.ForCommand("acme/other", "fix")
	assert.ErrorContains(t, err, "not enabled on acme/other")
}

func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name, src, code string
		line, col       int
	}{
		{"syntax", "graphs: [\n", CodeSyntax, 0, 0},
		{"unknown field", "graphs: {fix: fix.yaml}\ntriggers:\n  - {repo: a/b, label: x, graph: fix, lable: y}\n", CodeUnknownField, 3, 39},
		{"bad value", "graphs: {fix: fix.yaml}\ntriggers: 3\n", CodeBadValue, 2, 11},
		{"empty", "", CodeNotAFile, 1, 1},
		{"no triggers", "graphs: {fix: fix.yaml}\n", CodeNoTriggers, 0, 0},
		{"bad repo", "graphs: {fix: fix.yaml}\ntriggers:\n  - {repo: widgets, label: x, graph: fix}\n", CodeBadRepo, 3, 12},
		{"no event", "graphs: {fix: fix.yaml}\ntriggers:\n  - {repo: a/b, graph: fix}\n", CodeBadEvent, 3, 0},
		{"unknown graph", "graphs: {fix: fix.yaml}\ntriggers:\n  - {repo: a/b, label: x, graph: fox}\n", CodeUnknownGraph, 3, 34},
		{"broken graph", "graphs: {bad: broken.yaml}\ntriggers:\n  - {repo: a/b, label: x, graph: bad}\n", CodeBadGraph, 1, 0},
		{"missing graph", "graphs: {gone: gone.yaml}\ntriggers:\n  - {repo: a/b, label: x, graph: gone}\n", CodeBadGraph, 1, 0},
		{"undeclared input", "graphs: {fix: fix.yaml}\ntriggers:\n  - {repo: a/b, label: x, graph: fix, inputs: {colour: red}}\n", CodeBadInput, 3, 0},
		{"bad command", "graphs: {fix: fix.yaml}\ntriggers:\n  - {repo: a/b, command: start}\n", CodeBadCommand, 3, 0},
		{"bad name", "graphs: {\"fix it\": fix.yaml}\ntriggers:\n  - {repo: a/b, command: run}\n", CodeBadName, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "testdata/triggers.yaml")
			require.Error(t, err)
			var ps graph.Problems
			switch e := err.(type) {
			case *Error:
				ps = e.Problems
			case *graph.ParseError:
				ps = e.Problems
			default:
				t.Fatalf("%T: %v", err, err)
			}
			var found *graph.Problem
			for i := range ps {
				if ps[i].Code == tc.code {
					found = &ps[i]
				}
			}
			require.NotNil(t, found, "%s: %v", tc.code, err)
			if tc.line > 0 {
				assert.Equal(t, tc.line, found.Pos.Line, found.String())
			}
			if tc.col > 0 {
				assert.Equal(t, tc.col, found.Pos.Column, found.String())
			}
			assert.Contains(t, found.String(), "testdata/triggers.yaml:")
		})
	}
}

func TestEveryCodeIsDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Codes() {
		assert.False(t, seen[c[0]], c[0])
		seen[c[0]] = true
	}
	assert.Len(t, seen, 13)
}

package graph

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func examplePaths(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("../../examples/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	return paths
}

// graphDocuments reads the documents of a file of test graphs, after its
// first: each begins with a line "# NAME", and is returned under NAME as
// the lines after that one, from that line's newline on (so a position
// in the file's document is a position in what is returned).
func graphDocuments(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	docs := strings.Split(string(b), "\n---\n")
	out := map[string]string{}
	for i, d := range docs[1:] {
		if i < len(docs)-2 {
			d += "\n" // the newline the separator began with ends the document before it
		}
		name, src, ok := strings.Cut(d, "\n")
		require.True(t, ok && strings.HasPrefix(name, "# "), "%s: a document starts with # NAME, not %q", path, name)
		out[strings.TrimPrefix(name, "# ")] = "\n" + src
	}
	return out
}

func TestParseReviewLoop(t *testing.T) {
	g, err := ParseFile("../../examples/review-loop.yaml")
	require.NoError(t, err)

	assert.Equal(t, "review-loop", g.Name)
	assert.Equal(t, "writer", g.Start)
	require.Len(t, g.Inputs, 1)
	assert.Equal(t, Input{Name: "topic", Description: "What the post is about.", Default: "durable agent workflows"}, g.Inputs[0])

	require.Len(t, g.Nodes, 4)
	w := g.Nodes[0]
	assert.Equal(t, "writer", w.ID)
	assert.Equal(t, KindAgent, w.Kind)
	assert.Equal(t, "scripted", w.Backend)
	assert.Equal(t, SessionPersist, w.Session)
	assert.Equal(t, 5, w.MaxVisits)
	assert.Len(t, w.Script, 3)
	assert.Equal(t, Pos{Line: 16, Column: 5}, w.Pos)
	assert.Equal(t, SessionPersist, g.Nodes[1].Session)
	assert.Equal(t, "Publish draft?", g.Nodes[2].Question)

	require.Len(t, g.Edges, 4)
	back := g.Edges[2]
	assert.Equal(t, Edge{From: "judge", To: "writer", When: "output.approved != true", With: map[string]any{"feedback": "output.feedback"}, Pos: back.Pos}, back)
	assert.Equal(t, Pos{Line: 65, Column: 5}, back.Pos)
	assert.Equal(t, Pos{Line: 67, Column: 11}, g.Source.At("edges[2].when"))
	assert.Equal(t, Pos{Line: 69, Column: 17}, g.Source.At("edges[2].with.feedback"))
	assert.Equal(t, "../../examples/review-loop.yaml", g.Source.File)

	n, ok := g.Node("judge")
	require.True(t, ok)
	assert.Equal(t, "judge", n.ID)
	assert.Len(t, g.EdgesFrom("judge"), 2)
}

func TestParseValues(t *testing.T) {
	g, err := Parse([]byte(`
name: values
start: t
inputs:
  - {name: n, default: 3}
  - {name: neg, default: -2}
  - {name: f, default: 1.5}
  - {name: b, default: false, required: true}
  - {name: l, default: [1, x]}
nodes:
  - id: t
    kind: tool
    run: [go, test, ./...]
    timeout: 90s
  - {id: done, kind: end}
edges:
  - from: t
    to: done
    with: {n: 3, s: "'text'", m: {k: [1, 2]}, e: output.code}
`), "v.yaml")
	require.NoError(t, err)
	assert.Equal(t, []any{3, -2, 1.5, false, []any{1, "x"}}, []any{g.Inputs[0].Default, g.Inputs[1].Default, g.Inputs[2].Default, g.Inputs[3].Default, g.Inputs[4].Default})
	assert.True(t, g.Inputs[3].Required)
	assert.Equal(t, Duration(90e9), g.Nodes[0].Timeout)
	assert.Equal(t, []string{"go", "test", "./..."}, g.Nodes[0].Run)
	assert.Equal(t, map[string]any{"n": 3, "s": "'text'", "m": map[string]any{"k": []any{1, 2}}, "e": "output.code"}, g.Edges[0].With)
}

func TestParseAnchorsAndMergeKeys(t *testing.T) {
	g, err := Parse([]byte(`
start: a
nodes:
  - &agent
    id: a
    kind: agent
    backend: scripted
    session: persist
  - <<: *agent
    id: b
    session: fork
  - {id: done, kind: end}
edges:
  - {from: a, to: b}
  - {from: b, to: done}
`), "m.yaml")
	require.NoError(t, err)
	assert.Equal(t, "b", g.Nodes[1].ID)
	assert.Equal(t, KindAgent, g.Nodes[1].Kind)
	assert.Equal(t, "scripted", g.Nodes[1].Backend)
	assert.Equal(t, SessionFork, g.Nodes[1].Session)
	assert.Empty(t, Validate(g))
}

// parseCodesTested lists the codes TestParseErrors raises.
var parseCodesTested = []string{CodeSyntax, CodeUnknownField, CodeBadValue, CodeDuplicateKey, CodeNotAGraph}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string // "line:col CODE node"
		msg  string   // part of the first message
	}{
		{"syntax", "start: a\nnodes:\n  - id: a\n   kind: end\n", []string{"4:4 G001 "}, "fix the YAML"},
		{"unclosed flow", "start: a\nnodes: [\n", []string{"2:8 G001 "}, ""},
		{"every unknown field at once", `
start: a
stat: a
nodes:
  - id: a
    kind: end
    qestion: hi
    when: x
edges:
  - from: a
    to: a
    kind: end
`, []string{"3:1 G002 ", "7:5 G002 a", "8:5 G002 a", "12:5 G002 "}, `unknown field "stat" in the graph; did you mean "start"?`},
		{"misplaced field hint", "start: a\nnodes:\n  - {id: a, kind: end, when: x}\n", []string{"3:24 G002 a"}, `"when" is a field of edges`},
		{"bad values", `
start: a
nodes:
  - id: a
    kind: agent
    session: persistent
    max_visits: lots
    timeout: soon
    run: echo hi
  - id: [x]
`, []string{"6:14 G003 a", "7:17 G003 a", "8:14 G003 a", "9:10 G003 a", "10:9 G003 "}, "persistent"},
		{"nodes not a list", "start: a\nnodes: {id: a}\n", []string{"2:8 G003 "}, "nodes must be a list"},
		{"node not a mapping", "start: a\nnodes:\n  - a\n", []string{"3:5 G003 "}, "node #1 must be a mapping"},
		{"duplicate key", "start: a\nstart: b\nnodes:\n  - id: a\n    kind: end\n    kind: agent\n", []string{"2:1 G004 ", "6:5 G004 a"}, `sets "start" twice (first at line 1)`},
		{"duplicate with key", "start: a\nnodes: [{id: a, kind: end}]\nedges:\n  - from: a\n    to: a\n    with:\n      x: 1\n      x: 2\n", []string{"8:7 G004 "}, `with of edge a -> a sets "x" twice (first at line 7)`},
		{"empty", "# nothing here\n", []string{"1:1 G005 "}, "the file is empty"},
		{"two documents", "start: a\n---\nstart: b\n", []string{"3:1 G005 "}, "2 YAML documents"},
		{"a list, not a graph", "- a\n- b\n", []string{"1:1 G003 "}, "the graph must be a mapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := Parse([]byte(c.src), "bad.yaml")
			require.Error(t, err)
			assert.Nil(t, g)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "bad.yaml", pe.File)
			assert.Equal(t, c.want, brief(pe.Problems), pe.Error())
			assert.Contains(t, pe.Problems[0].Message, c.msg)
			assert.Contains(t, err.Error(), "bad.yaml:")
		})
	}
}

func TestParseFileMissing(t *testing.T) {
	_, err := ParseFile(filepath.Join(t.TempDir(), "none.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

package graph

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withoutPositions drops what Parse records about the file, which is not
// part of a graph's identity.
func withoutPositions(g *Graph) *Graph {
	c := *g
	c.Source = nil
	c.Nodes = append([]Node(nil), g.Nodes...)
	c.Edges = append([]Edge(nil), g.Edges...)
	for i := range c.Nodes {
		c.Nodes[i].Pos = Pos{}
	}
	for i := range c.Edges {
		c.Edges[i].Pos = Pos{}
	}
	return &c
}

// roundTrip checks that Parse -> Encode -> Parse gives the same graph, and
// that encoding is stable.
func roundTrip(t *testing.T, g *Graph) {
	t.Helper()
	out, err := Encode(g)
	require.NoError(t, err)
	back, err := Parse(out, "encoded.yaml")
	require.NoError(t, err, "encoded graph does not parse:\n%s", out)
	assert.Equal(t, withoutPositions(g), withoutPositions(back), "encoded as:\n%s", out)
	again, err := Encode(back)
	require.NoError(t, err)
	assert.Equal(t, string(out), string(again))
}

func TestRoundTripExamples(t *testing.T) {
	paths := append(examplePaths(t), "testdata/broken.yaml")
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			g, err := ParseFile(path)
			require.NoError(t, err)
			roundTrip(t, g)
		})
	}
}

// tricky strings that YAML would read as something else, or that need
// quoting or block style to survive.
var trickyStrings = []string{
	"", " ", "true", "no", "yes", "null", "~", "0x10", "1e3", "012", "-", "- x", "a: b", "#x", "x #y",
	"'quoted'", `"dq"`, "{a}", "[a]", "*alias", "&anchor", "!tag", "%pct", "@at", "`tick`", "|", ">",
	"tab\there", "line\nbreak", "trailing newline\n", "two\n\nbreaks\n\n", "  leading", "trailing  ",
	"ünïcödé ✓", "back\\slash", "output.approved == true", "{{.input.topic}}", "---", "...",
	"multi\n  indented\n    lines", "crlf\r\nline", "nul\x00", "esc\x1b[0m", "ls\u2028ps\u2029", "bom\ufeff", "nel\u0085",
	"tab\tin\nblock\n", "trailing \nspace", "\nleading newline", " lead\nspace", "a\n\n\n", "\n", "\n\n", "12:30", "3.0", ".inf", "=",
}

func complexGraph() *Graph {
	g := &Graph{
		Name:  "complex: a graph",
		Start: "n0",
		Inputs: []Input{
			{Name: "topic", Description: "what: it is about", Required: true},
			{Name: "n", Default: 3},
			{Name: "f", Default: 2.5},
			{Name: "b", Default: false},
			{Name: "l", Default: []any{1, "two", map[string]any{"three": true}}},
			{Name: "m", Default: map[string]any{"k": "v", "n": -1}},
		},
	}
	for i, s := range trickyStrings {
		id := fmt.Sprintf("n%d", i)
		n := Node{ID: id, Kind: Kinds[i%len(Kinds)], MaxVisits: i}
		switch n.Kind {
		case KindAgent:
			n.Backend = "scripted"
			n.Fallback = []string{"codex", "pi"}
			n.Session = SessionMode(i % 4)
			n.Prompt = s
			n.Script = []string{s, "JSON: {\"approved\": true}"}
			n.Model = s
			n.Workdir = s
			n.Fanout = FanoutAll
		case KindHuman:
			n.Question = s
		case KindTool:
			n.Run = []string{"sh", "-c", s}
			n.Timeout = Duration(int64(i) * 1e9)
		}
		g.Nodes = append(g.Nodes, n)
		g.Edges = append(g.Edges, Edge{
			From: id,
			To:   fmt.Sprintf("n%d", (i+1)%len(trickyStrings)),
			When: s,
			With: map[string]any{"s": s, "lit": i, "list": []any{s}, s + "key": true},
		})
	}
	return g
}

func TestRoundTripComplexGraph(t *testing.T) {
	roundTrip(t, complexGraph())
}

func TestRoundTripJSON(t *testing.T) {
	// The workflow receives a Graph as JSON; a parsed graph survives that
	// too (numbers aside, which JSON makes float64).
	g, err := ParseFile("../../examples/review-loop.yaml")
	require.NoError(t, err)
	b, err := json.Marshal(g)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "Pos")
	assert.NotContains(t, string(b), "Source")
	var back Graph
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, withoutPositions(g), &back)
}

func TestEncodeLooksLikeTheDSL(t *testing.T) {
	src, err := os.ReadFile("../../examples/fanout.yaml")
	require.NoError(t, err)
	g, err := Parse(src, "fanout.yaml")
	require.NoError(t, err)
	out, err := Encode(g)
	require.NoError(t, err)
	s := string(out)
	assert.True(t, strings.HasPrefix(s, "name: fanout\nstart: plan\n"), s)
	assert.Contains(t, s, "  - id: check\n    kind: tool\n    run:\n      - echo\n      - checks passed\n    timeout: 30s\n")
	assert.NotContains(t, s, "session: fresh")
	assert.NotContains(t, s, "max_visits: 0")
}

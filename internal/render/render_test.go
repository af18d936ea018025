package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

var g = &graph.Graph{
	Name: "loop", Start: "w",
	Nodes: []graph.Node{
		{ID: "w", Kind: graph.KindAgent, Backend: "scripted", Session: graph.SessionPersist},
		{ID: "ok-1", Kind: graph.KindHuman, Question: "?"},
		{ID: "done", Kind: graph.KindEnd},
	},
	Edges: []graph.Edge{{From: "w", To: "ok-1", When: "output.approved"}, {From: "w", To: "w"}, {From: "ok-1", To: "done"}},
}

func TestMermaidHighlightsTheRunsPath(t *testing.T) {
	s, err := Draw(g, "mermaid", &Taken{Visits: map[string]int{"w": 2, "ok-1": 1}, Transitions: []runstore.Transition{{From: "w", To: "w"}, {From: "w", To: "ok-1"}}})
	require.NoError(t, err)
	assert.Contains(t, s, `n_w["w (agent scripted, persist) ×2"]`)
	assert.Contains(t, s, `n_w -->|"output.approved"| n_ok_1`)
	assert.Contains(t, s, "class n_w visited")
	assert.NotContains(t, s, "class n_done visited")
	assert.Contains(t, s, "linkStyle 0 stroke")
	assert.Contains(t, s, "linkStyle 1 stroke")
	assert.NotContains(t, s, "linkStyle 2 stroke")
}

func TestDot(t *testing.T) {
	s, err := Draw(g, "dot", nil)
	require.NoError(t, err)
	assert.Contains(t, s, `digraph "loop" {`)
	assert.Contains(t, s, `"w" -> "ok-1" [label="output.approved"];`)
	assert.Contains(t, s, `"done" [label="done (end)", shape=doublecircle];`)
	_, err = Draw(g, "svg", nil)
	assert.ErrorContains(t, err, `unknown format "svg"`)
}

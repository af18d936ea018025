// Package render draws a graph as Mermaid or Graphviz DOT, optionally
// highlighting the edges a run took and the nodes it visited, and shows
// untrusted text on a terminal (Terminal, TerminalWriter): every command
// of `tether` prints through a TerminalWriter, so no byte an agent, a tool
// or the store wrote reaches a person's terminal as a control.
package render

import (
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// Formats are the names accepted by Draw.
var Formats = []string{"mermaid", "dot"}

// Taken is what a run did: visit counts and the edges it took.
type Taken struct {
	Visits      map[string]int
	Transitions []runstore.Transition
	Current     []string
}

func (t *Taken) took(from, to string) bool {
	if t == nil {
		return false
	}
	for _, tr := range t.Transitions {
		if tr.From == from && tr.To == to {
			return true
		}
	}
	return false
}

// Draw renders g in format; taken may be nil.
func Draw(g *graph.Graph, format string, taken *Taken) (string, error) {
	switch format {
	case "mermaid":
		return mermaid(g, taken), nil
	case "dot":
		return dot(g, taken), nil
	}
	return "", fmt.Errorf("unknown format %q; use one of %s", format, strings.Join(Formats, ", "))
}

func label(n graph.Node, taken *Taken) string {
	l := n.ID + " (" + string(n.Kind)
	if n.Kind == graph.KindAgent {
		l += " " + n.Backend
		if n.Session != graph.SessionFresh {
			l += ", " + n.Session.String()
		}
	}
	l += ")"
	if taken != nil && taken.Visits[n.ID] > 0 {
		l += fmt.Sprintf(" ×%d", taken.Visits[n.ID])
	}
	return l
}

func mermaidID(id string) string { return "n_" + strings.ReplaceAll(id, "-", "_") }

func mermaid(g *graph.Graph, taken *Taken) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for _, n := range g.Nodes {
		open, closing := "[", "]"
		switch n.Kind {
		case graph.KindHuman, graph.KindReview:
			open, closing = "[/", "/]"
		case graph.KindTool:
			open, closing = "[[", "]]"
		case graph.KindJoin:
			open, closing = "{{", "}}"
		case graph.KindEnd:
			open, closing = "([", "])"
		}
		fmt.Fprintf(&b, "  %s%s\"%s\"%s\n", mermaidID(n.ID), open, label(n, taken), closing)
	}
	var takenIdx []int
	for i, e := range g.Edges {
		arrow := "-->"
		if e.When != "" {
			fmt.Fprintf(&b, "  %s %s|%q| %s\n", mermaidID(e.From), arrow, e.When, mermaidID(e.To))
		} else {
			fmt.Fprintf(&b, "  %s %s %s\n", mermaidID(e.From), arrow, mermaidID(e.To))
		}
		if taken.took(e.From, e.To) {
			takenIdx = append(takenIdx, i)
		}
	}
	if taken != nil {
		b.WriteString("  classDef visited fill:#d4f4dd,stroke:#2b8a3e\n")
		for _, n := range g.Nodes {
			if taken.Visits[n.ID] > 0 {
				fmt.Fprintf(&b, "  class %s visited\n", mermaidID(n.ID))
			}
		}
		for _, i := range takenIdx {
			fmt.Fprintf(&b, "  linkStyle %d stroke:#2b8a3e,stroke-width:3px\n", i)
		}
	}
	return b.String()
}

func dot(g *graph.Graph, taken *Taken) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %q {\n  rankdir=TB;\n", g.Name)
	for _, n := range g.Nodes {
		shape := "box"
		switch n.Kind {
		case graph.KindHuman, graph.KindReview:
			shape = "parallelogram"
		case graph.KindTool:
			shape = "component"
		case graph.KindJoin:
			shape = "diamond"
		case graph.KindEnd:
			shape = "doublecircle"
		}
		attrs := fmt.Sprintf("label=%q, shape=%s", label(n, taken), shape)
		if taken != nil && taken.Visits[n.ID] > 0 {
			attrs += ", style=filled, fillcolor=\"#d4f4dd\""
		}
		fmt.Fprintf(&b, "  %q [%s];\n", n.ID, attrs)
	}
	for _, e := range g.Edges {
		attrs := ""
		if e.When != "" {
			attrs = fmt.Sprintf("label=%q", e.When)
		}
		if taken.took(e.From, e.To) {
			if attrs != "" {
				attrs += ", "
			}
			attrs += "color=\"#2b8a3e\", penwidth=3"
		}
		fmt.Fprintf(&b, "  %q -> %q [%s];\n", e.From, e.To, attrs)
	}
	b.WriteString("}\n")
	return b.String()
}

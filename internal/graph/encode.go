package graph

import (
	"fmt"

	"github.com/goccy/go-yaml"
)

// Encode writes g as a graph file. Fields appear in the order the DSL
// documents them, unset optional fields are left out, multi-line strings
// (prompts) are written as literal blocks, and map keys are sorted, so the
// same graph always encodes to the same bytes. Parse(Encode(g)) gives back
// g, positions aside.
func Encode(g *Graph) ([]byte, error) {
	out, err := yaml.MarshalWithOptions(g,
		yaml.Indent(2),
		yaml.IndentSequence(true),
		yaml.UseLiteralStyleIfMultiline(true),
	)
	if err != nil {
		return nil, fmt.Errorf("graph: encode %q: %w", g.Name, err)
	}
	return out, nil
}

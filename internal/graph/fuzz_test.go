package graph

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParse: any input either parses or gives a ParseError; a parsed graph
// validates without panicking and survives Encode then Parse unchanged.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob("../../examples/*.yaml")
	paths = append(paths, "testdata/broken.yaml")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("start: a\nnodes:\n  - &x {id: a, kind: end}\n  - <<: *x\n    id: b\n"))
	f.Add([]byte("start: a\nnodes: [{id: a, kind: tool, run: [\"\\t\", '|'], timeout: 1s}]\nedges: [{from: a, to: a, with: {k: [1, {x: null}]}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data, "fuzz.yaml")
		if err != nil {
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.NotEmpty(t, pe.Problems)
			return
		}
		_ = Validate(g)
		out, err := Encode(g)
		require.NoError(t, err)
		back, err := Parse(out, "encoded.yaml")
		require.NoError(t, err, "input:\n%q\nencoded:\n%s", data, out)
		assert.Equal(t, withoutPositions(g), withoutPositions(back), "input:\n%q\nencoded:\n%s", data, out)
	})
}

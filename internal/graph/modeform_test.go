package graph

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The two fields written as a mode or one mapping form read alike, in
// JSON and through the YAML library's decoder: a string is the mode, a
// mapping the form with its own fields only, anything else is refused
// with what the field takes.
func TestModeOrFormReadsBothFieldsAlike(t *testing.T) {
	type holder struct {
		W *JoinWorkspace `json:"w" yaml:"w"`
		N *Network       `json:"n" yaml:"n"`
	}
	for name, dec := range map[string]func([]byte, any) error{"json": json.Unmarshal, "yaml": yamlUnmarshal} {
		t.Run(name, func(t *testing.T) {
			var h holder
			require.NoError(t, dec([]byte(`{"w": "merge", "n": "none"}`), &h))
			assert.Equal(t, JoinWorkspace{Mode: JoinMerge}, *h.W)
			assert.Equal(t, Network{Mode: NetworkNone}, *h.N)

			h = holder{}
			require.NoError(t, dec([]byte(`{"w": {"pick": "true", "by": "diff.lines"}, "n": {"allow": ["a.example:443"]}}`), &h))
			assert.Equal(t, JoinWorkspace{Mode: JoinPick, Pick: "true", By: "diff.lines"}, *h.W)
			assert.Equal(t, Network{Allow: []string{"a.example:443"}}, *h.N)

			for doc, says := range map[string]string{
				`{"w": {"pik": "x"}}`:    "graph: join workspace",
				`{"n": {"allw": ["x"]}}`: "graph: network",
				`{"w": [1]}`:             "want trunk, merge, a mapping",
				`{"n": [1]}`:             "want model, none, or a mapping",
			} {
				err := dec([]byte(doc), &holder{})
				require.Error(t, err, doc)
				assert.Contains(t, err.Error(), says, doc)
			}
		})
	}
}

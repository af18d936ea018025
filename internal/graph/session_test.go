package graph

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionModeIota pins the numeric values: persist was appended last,
// so the modes before it (fork included) keep their numbers.
func TestSessionModeIota(t *testing.T) {
	assert.Equal(t, 0, int(SessionFresh))
	assert.Equal(t, 1, int(SessionInherit))
	assert.Equal(t, 2, int(SessionFork))
	assert.Equal(t, 3, int(SessionPersist))
	assert.Equal(t, []string{"fresh", "inherit", "fork", "persist"}, SessionModes())
}

func TestSessionModeJSON(t *testing.T) {
	for _, m := range []SessionMode{SessionFresh, SessionInherit, SessionFork, SessionPersist} {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		assert.Equal(t, `"`+m.String()+`"`, string(b))
		var back SessionMode
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, m, back)
	}
	var m SessionMode
	assert.ErrorContains(t, json.Unmarshal([]byte(`"forever"`), &m), `unknown session mode "forever"`)
	_, err := json.Marshal(SessionMode(9))
	assert.Error(t, err)
}

func TestNodeIDAlphabet(t *testing.T) {
	g, err := Parse([]byte(`
name: ids
start: "a.b"
nodes:
  - {id: "a.b", kind: agent, backend: scripted, prompt: hi}
  - {id: done, kind: end}
edges:
  - {from: "a.b", to: done}
`), "ids.yaml")
	require.NoError(t, err)
	probs := Validate(g)
	require.True(t, probs.HasErrors())
	assert.Contains(t, probs.String(), "G041")
	assert.Contains(t, probs.String(), `"a_b"`)
}

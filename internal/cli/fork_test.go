package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/runstore"
)

// A fork omits both kinds of session ref (ADR-089) and keeps the outputs,
// which never held a ref to begin with.
func TestForkOmitsRefs(t *testing.T) {
	src := &runstore.Checkpoint{
		RunID: "a", Seq: 7, Status: runstore.StatusFailed,
		Outputs:      map[string]map[string]any{"w": {"text": "hi", "_session_id": "s1"}},
		NodeSessions: map[string]runstore.NodeSessionSlot{"w": {Backend: "pi", SessionID: "s1", StateRef: "runs/a/sessions/w/X"}},
		Pause:        &runstore.PauseInfo{NodeID: "w", BackendSessionStateRef: "runs/a/sessions/w/pause/Y", Questions: []runstore.Question{{ID: "w-1-q1"}}},
	}
	cp := Fork(src)
	b, err := json.Marshal(cp)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "runs/a/sessions")
	assert.NotContains(t, string(b), "_session_state_ref")
	assert.Empty(t, cp.NodeSessions)
	assert.Equal(t, "w-1-q1", cp.Pause.Questions[0].ID)
	assert.Equal(t, &runstore.Lineage{Run: "a", Seq: 7, Kind: "fork"}, cp.Lineage)
	assert.Equal(t, int64(0), cp.Seq)
	assert.Equal(t, runstore.StatusRunning, cp.Status)
	// The source is untouched.
	assert.Equal(t, "runs/a/sessions/w/pause/Y", src.Pause.BackendSessionStateRef)
	assert.NotEmpty(t, src.NodeSessions)
}

func TestNewRunIDIsAValidRunID(t *testing.T) {
	for _, name := range []string{"Review Loop", "", "..", "ünïcode graph/with slashes", "a-very-long-graph-name-that-goes-on-and-on-and-on"} {
		id := newRunID(name)
		require.NoError(t, runstore.ValidateRunID(id), id)
	}
	assert.Regexp(t, `^review-loop-[0-9a-z]{26}$`, newRunID("Review Loop"))
}

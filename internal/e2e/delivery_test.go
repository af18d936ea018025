package e2e

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/scripted"
)

// TestRunInputSessionIDIsNotADelivery: a run started with the input
// _session_id naming the session its first node will serve (the worker's
// scripted agent mints known ids). The edge to the inherit node maps
// nothing, so no edge delivered that id (ADR-089 rule 1): the inherit node
// starts a fresh conversation on the worker that holds the session, and
// says why. The build before edge-delivery resumed it
// (edge-delivery-before.json).
func TestRunInputSessionIDIsNotADelivery(t *testing.T) {
	h := newHarness(t, "")
	var n atomic.Int32
	mint := func(i int32) string { return fmt.Sprintf("%s01JAAAAAAAAAAAAAAAAAAAAA%02d", scripted.IDPrefix, i) }
	h.scriptedIDs = func() string { return mint(n.Add(1)) }
	h.startWorker()
	g := parseGraph(t, graphYAML(t, "run-input-session"), "run-input-session.yaml")
	const id = "run-input-session"
	res, err := h.result(h.start(id, g, map[string]any{agent.SessionIDKey: mint(1)}))
	require.NoError(t, err)
	st := h.state(id)
	assert.Equal(t, mint(1), st.Outputs["a"][agent.SessionIDKey], "a served the session the run input names")
	assert.Equal(t, "turn 1: b", res.Output["said"], "b's conversation is a new one")
	assert.Equal(t, mint(2), st.Outputs["b"][agent.SessionIDKey])
	assert.Contains(t, st.Outputs["b"][activities.SessionNoteKey], "rule 1 failed: no incoming edge's own mapping delivered it")
	h.recordHistory("edge-delivery", id)
}

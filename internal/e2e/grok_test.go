package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/activities"
)

// TestGrokRun runs a graph on grok, a backend without persist, through the
// tether CLI on confined workers, a fresh one for every visit: the agent
// edits the run's workspace with the CLI's own tools and asks the human
// (the reply convention); the answer reaches its next visit, which runs
// fresh; a tool node sees the agent's file.
func TestGrokRun(t *testing.T) {
	h := newHarness(t, "")
	fake := cliBackends(t, h)
	fresh := h.freshWorkerPerVisit()
	h.useCLI(t)

	file := graphFile(t, "grok-run")
	code, out := tetherCode(t, "validate", file)
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "warning", out)

	id := "grok-run"
	code, out = tetherCode(t, "run", file, "--id", id, "--heartbeat-timeout", "10s")
	require.Equal(t, 0, code, out)
	q := h.waitQuestion(id)
	assert.Equal(t, "which database?", q.Text)
	h.answer(id, q.ID, "postgres")
	res, err := h.result(h.c.GetWorkflow(t.Context(), id, ""))
	require.NoError(t, err)
	require.Equal(t, "writer>asker>check>done", pathString(res))
	assert.GreaterOrEqual(t, fresh.Visits(), 3, "each visit had a worker of its own")

	var answered bool
	for _, r := range fake.Requests() {
		if strings.Contains(strings.Join(r.Prompts, "\n"), "postgres") {
			answered = true
		}
	}
	assert.True(t, answered, "the answer reached the asker's fresh visit")
	assert.Contains(t, activities.LostAnswerIntro, "The user's answer:", "the fake model's sign that a prompt holds the answer")
	cp, err := h.runs.Latest(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, "step one\n", fmt.Sprint(cp.Outputs["check"]["stdout"]), "the tool node, on a worker of its own, read the file the agent wrote")
	assert.Empty(t, cp.NodeSessions, "grok keeps no conversation")
}

package soak

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/graph"
)

// The writer's conversation holds a retry note only on the visit an
// attempt of which was lost with its worker, exactly as that visit's
// output recorded it; a note anywhere else is a problem, and the loss
// read in one execution holds for the visit's completion in the next.
func TestWriterPromptsAcceptTheRetryNoteOnlyOnTheInterruptedVisit(t *testing.T) {
	const note = "Note: an earlier attempt of this turn was interrupted (its worker stopped answering)."
	r := &run{id: "r1", kind: "persist", execs: []execution{
		{visits: map[string]visitRecord{
			"writer/1": {},
			"writer/2": {note: note, interrupted: true},
			// The visit lost an attempt here, and completed after a move.
			"writer/3": {interrupted: true},
		}},
		{visits: map[string]visitRecord{
			"writer/3": {note: note},
			"writer/4": {note: note},
		}},
	}}
	prompts, problems := writerPrompts(r, 4)
	assert.Equal(t, []string{"step 1", note + "\n\nstep 2", note + "\n\nstep 3", "step 4"}, prompts)
	assert.Equal(t, []string{`run r1 (persist): writer visit 4 carries a retry note though no attempt of it was lost: "` + note + `"`}, problems)

	clean, problems := writerPrompts(&run{id: "r2", kind: "persist", execs: []execution{{visits: map[string]visitRecord{"writer/1": {}}}}}, 2)
	assert.Equal(t, []string{"step 1", "step 2"}, clean)
	assert.Empty(t, problems)
}

// The soak's graphs in graphs/, filled in as the soak fills them in,
// parse and validate clean: a rig that would panic on one is caught
// before it runs.
func TestGraphFilesAreValid(t *testing.T) {
	for _, c := range []struct {
		name string
		data graphData
	}{
		{"soak-open", graphData{}},
		{"soak-lost", graphData{}},
		{"soak-persist", graphData{Rounds: 3}},
		{"soak-persist", graphData{Rounds: 6, AskAt: 3}},
		{"soak-cli", graphData{Rounds: 4, AskAt: 2, Backend: cliBackend}},
		{"soak-tool", graphData{Rounds: 5}},
		{"soak-fanout", graphData{Rounds: 2}},
	} {
		g := graphFile(c.name, c.data)
		assert.Equal(t, c.name, g.Name)
		assert.Empty(t, graph.Validate(g).String(), c.name)
	}
}

package workflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// Each path step keeps what its own visit produced: an agent's usage over
// every round of the visit (one that asked the user costs two calls), a
// tool's exit code and the last lines it wrote, a timeout as a timeout.
// The node's output holds only its latest visit, so before steps kept
// this, an earlier visit's figures were lost.
func (s *GraphRunSuite) TestStepsKeepEachVisitsOwnResult() {
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "writer-1-q1", Text: "go on"})
	}, time.Hour)
	res, err := s.run(graphYAML("steps"), nil)
	s.Require().NoError(err)
	s.Equal("writer>check>writer>check>slow>done", pathOf(res))
	path := s.latest().Path
	s.Require().Len(path, 6)

	w1, c1, w2, c2, slow, done := path[0], path[1], path[2], path[3], path[4], path[5]
	s.Equal(runstore.OutcomeOK, w1.Outcome)
	s.Equal(agent.Usage{InputTokens: 180, OutputTokens: 20, CostUSD: 0.02, CostKnown: true}, w1.Usage, "both rounds of the visit that asked")
	s.Equal(agent.Usage{InputTokens: 90, OutputTokens: 10, CostUSD: 0.01, CostKnown: true}, w2.Usage)
	s.Contains(w2.Detail, "turn 1 of")

	s.Equal("ok", c1.Status, "a tool that exited 1 finished its visit")
	s.Equal(runstore.OutcomeExited, c1.Outcome)
	s.Equal(1, c1.ExitCode)
	s.Equal("want 3, got 2 ⏎ FAIL ⏎ more", c1.Detail, "the last lines of stderr")
	s.Equal(runstore.OutcomeOK, c2.Outcome)
	s.Zero(c2.ExitCode)
	s.Equal("ok  pkg 0.1s", c2.Detail, "stdout's last line, stderr being empty")
	s.True(c2.Usage.IsZero())

	s.Equal(runstore.OutcomeTimedOut, slow.Outcome)
	s.True(slow.TimedOut)
	s.Equal(-1, slow.ExitCode)
	s.Equal(runstore.OutcomeOK, done.Outcome)
}

func TestFailedStepSaysItsCauseInOneLine(t *testing.T) {
	long := errors.New("agent node \"writer\" (visit 2):\n" + strings.Repeat("no EC2 IMDS role found, ", 100))
	st := failedStep(runstore.Step{Node: "writer", Visit: 2}, long)
	assert.Equal(t, "failed", st.Status)
	assert.Equal(t, runstore.OutcomeFailed, st.Outcome)
	assert.LessOrEqual(t, len(st.Detail), runstore.StepDetailBytes)
	assert.NotContains(t, st.Detail, "\n")
	assert.True(t, strings.HasPrefix(st.Detail, `agent node "writer" (visit 2): no EC2`), st.Detail)
}

func TestStepLinesCutOnARuneBoundary(t *testing.T) {
	s := strings.Repeat("é", runstore.StepDetailBytes)
	got := lastLines(s, 3)
	assert.LessOrEqual(t, len(got), runstore.StepDetailBytes)
	assert.True(t, strings.HasSuffix(got, "é…"), got)
	assert.Equal(t, "b ⏎ c", lastLines("a\n\n b \nc\n\n", 2))

	st := finishedStep(runstore.Step{}, &graph.Node{Kind: graph.KindHuman}, map[string]any{"answer": "  ship it\nplease"}, agent.Usage{})
	assert.Equal(t, "ship it …", st.Detail)
	st = finishedStep(runstore.Step{}, &graph.Node{Kind: graph.KindAgent}, map[string]any{"text": "x", agent.UsageKey: map[string]any{"input_tokens": 5.0}}, agent.Usage{})
	assert.Equal(t, int64(5), st.Usage.InputTokens, "a visit recorded before visits reported usage: the output's")
}

package workflows

import (
	"errors"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// A run continues as new, carrying its checkpoint and options, once its
// history holds ContinueAsNewEvents events (not one later), or when the
// server suggests it; below that it runs on.
func (s *GraphRunSuite) TestContinueAsNewAtTheThreshold() {
	for _, tc := range []struct {
		name      string
		length    int
		suggested bool
		continues bool
	}{
		{"at the threshold", 100, false, true},
		{"below it", 99, false, false},
		{"suggested", 1, true, true},
	} {
		s.Run(tc.name, func() {
			s.SetupTest()
			s.env.SetCurrentHistoryLength(tc.length)
			s.env.SetContinueAsNewSuggested(tc.suggested)
			opts := runapi.Options{ContinueAsNewEvents: 100, SessionHistory: 3}
			s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(persistLoop), Options: opts})
			err := s.env.GetWorkflowError()
			var can *workflow.ContinueAsNewError
			if !tc.continues {
				s.Require().NoError(err)
				return
			}
			s.Require().True(errors.As(err, &can), "%v", err)
			var next runapi.GraphRunInput
			s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
			s.Equal("run-1", next.RunID)
			s.Equal(opts, next.Options)
			s.Require().NotNil(next.Checkpoint)
			s.Equal("writer", next.Checkpoint.Cursor[0].Node, "before any visit")
			s.Empty(s.writerCalls())
		})
	}
}

// Two edges from a fan-out to the same node open two branches, named
// apart.
func (s *GraphRunSuite) TestBranchesToOneNodeAreNamedApart() {
	g := graphYAML("twice")
	_, err := s.run(g, nil)
	s.Require().NoError(err)
	var names []string
	for _, b := range s.latest().Joined {
		names = append(names, b.Name)
		s.True(b.Kept, "%s changed files, so the merge kept it", b.Name)
	}
	s.Equal([]string{"b", "b-2"}, names)
	s.Equal(2, s.latest().Workspace.Files)
}

// A pick join by the size of each branch's change counts lines added and
// removed: the branch that adds one line beats the one that adds one and
// removes one. A branch that changed nothing is not kept by a merge.
func (s *GraphRunSuite) TestJoinsWeighBranchesByTheirChange() {
	g := graphYAML("pick")
	_, err := s.run(g, nil)
	s.Require().NoError(err)
	ws, _ := s.latest().Outputs["best"]["workspace"].(map[string]any)
	s.Require().NotNil(ws)
	s.Equal("add", ws["kept"])
	lines, by := map[string]any{}, map[string]any{}
	for _, b := range ws["branches"].([]any) {
		m := b.(map[string]any)
		lines[m["name"].(string)] = m["lines"]
		by[m["name"].(string)] = m["by_value"]
		s.Equal(true, m["pick_value"], "a new run's pick says what its pick gave each branch")
	}
	s.EqualValues(map[string]any{"swap": float64(2), "add": float64(1)}, lines)
	s.EqualValues(map[string]any{"swap": float64(2), "add": float64(1)}, by, "and what its by weighed")

	s.SetupTest()
	_, err = s.run(strings.Replace(strings.Replace(g, `workspace: {pick: "true", by: diff.lines}`, "workspace: merge", 1),
		"run: [sh, -c, 'rm seed.txt; echo s > s.txt']", "run: [sh, -c, 'true']", 1), nil)
	s.Require().NoError(err)
	kept := map[string]bool{}
	for _, b := range s.latest().Joined {
		kept[b.Name] = b.Kept
	}
	s.Equal(map[string]bool{"swap": false, "add": true}, kept)
}

// A budget stop is recorded in the run store without a warning that it
// could not be.
func (s *GraphRunSuite) TestABudgetStopIsRecorded() {
	g := s.parse(strings.Replace(persistLoop, "start: writer\n", "start: writer\nbudget: {max_tokens: 150}\n", 1))
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: g})
	s.Require().Error(s.env.GetWorkflowError())
	s.Equal(runstore.StatusFailedResumable, s.latest().Status)
	for _, w := range s.logs.at("WARN") {
		s.NotContains(w, "could not record")
	}
	s.Contains(strings.Join(s.logs.at("WARN"), "\n"), "budget spent; stopping the run resumably reason=the run's budget is spent: 200 tokens used")
}

// The state query shows the nodes being visited now, and only those.
func (s *GraphRunSuite) TestStateShowsOnlyTheNodeBeingVisited() {
	g := graphYAML("writer-gate")
	var current []string
	s.env.RegisterDelayedCallback(func() {
		current = s.queryState().Current
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "gate-1", Text: "yes"})
	}, time.Hour)
	_, err := s.run(g, nil)
	s.Require().NoError(err)
	s.Equal([]string{"gate"}, current)
}

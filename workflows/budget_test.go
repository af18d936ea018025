package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// Per-node budgets and cost budgets stop a run as the run's token budget
// does: resumably, after the checkpoint of the visit that crossed them,
// with the reason naming which budget; resumed with that budget raised,
// the run goes on from the next node. Every fake visit costs 100 tokens
// and a cent (writer, judge, writer, judge, writer, judge to done).
func (s *GraphRunSuite) TestNodeAndCostBudgetsStopThenResume() {
	cases := []struct {
		name     string
		budget   string // inserted into persistLoop
		reason   string
		next     string // the node the run resumes at
		writers  int    // writer visits before the stop
		raise    func(g *graph.Graph)
		costUsed float64
	}{
		{
			name: "node max_tokens", budget: "writer-budget: {max_tokens: 150}",
			reason: "the budget of node writer is spent: 200 tokens used, max_tokens is 150", next: "judge", writers: 2,
			raise:    func(g *graph.Graph) { nodeOf(g, "writer").Budget = &graph.Budget{MaxTokens: 10_000} },
			costUsed: 0.03,
		},
		{
			name: "run max_cost_usd", budget: "budget: {max_cost_usd: 0.035}",
			reason: "the run's budget is spent: $0.0400 used, max_cost_usd is", next: "writer", writers: 2,
			raise:    func(g *graph.Graph) { g.Budget = &graph.Budget{MaxCostUSD: 1} },
			costUsed: 0.04,
		},
		{
			name: "node max_cost_usd", budget: "judge-budget: {max_cost_usd: 0.015}",
			reason: "the budget of node judge is spent: $0.0200 used, max_cost_usd is", next: "writer", writers: 2,
			raise:    func(g *graph.Graph) { nodeOf(g, "judge").Budget = &graph.Budget{MaxCostUSD: 1} },
			costUsed: 0.04,
		},
	}
	for _, tc := range cases {
		s.Run(tc.name, func() {
			s.SetupTest()
			src := persistLoop
			switch {
			case strings.HasPrefix(tc.budget, "writer-budget: "):
				src = strings.Replace(src, `prompt: "draft {{.visit}}"}`, `prompt: "draft {{.visit}}", budget: `+strings.TrimPrefix(tc.budget, "writer-budget: ")+`}`, 1)
			case strings.HasPrefix(tc.budget, "judge-budget: "):
				src = strings.Replace(src, `{{else}}false{{end}}}'}`, `{{else}}false{{end}}}', budget: `+strings.TrimPrefix(tc.budget, "judge-budget: ")+`}`, 1)
			default:
				src = strings.Replace(src, "start: writer\n", "start: writer\n"+tc.budget+"\n", 1)
			}
			s.Require().NotEqual(persistLoop, src, "the budget went into the graph")
			s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(src)})
			var appErr *temporal.ApplicationError
			s.Require().ErrorAs(s.env.GetWorkflowError(), &appErr)
			s.Equal(runapi.ErrTypeBudget, appErr.Type())
			s.Contains(appErr.Error(), tc.reason)
			var cp runstore.Checkpoint
			s.Require().NoError(appErr.Details(&cp))
			s.Equal(runstore.StatusFailedResumable, cp.Status)
			s.Require().Len(cp.Cursor, 1)
			s.Equal(tc.next, cp.Cursor[0].Node, "the stop comes after the crossing visit was committed")
			s.InDelta(tc.costUsed, runUsage(&cp).CostUSD, 1e-9)
			s.Equal(tc.writers, len(s.writerCalls()))
			stored := s.latest()
			s.Equal(runstore.StatusFailedResumable, stored.Status, "the run store records the stop")
			s.Contains(stored.Error, tc.reason)

			// Resumed with the spent budget as it was (or another one
			// raised), the run stops again before any visit.
			visits := s.visitCount()
			again := s.resume(&cp)
			var againErr *temporal.ApplicationError
			s.Require().ErrorAs(again.GetWorkflowError(), &againErr)
			s.Equal(runapi.ErrTypeBudget, againErr.Type())
			s.Contains(againErr.Error(), tc.reason)
			s.Equal(visits, s.visitCount(), "no visit runs past a spent budget")
			s.Require().NoError(againErr.Details(&cp))
			s.Equal(tc.next, cp.Cursor[0].Node)

			editGraph(&cp, tc.raise)
			done := s.resume(&cp)
			s.Require().NoError(done.GetWorkflowError())
			var res runapi.GraphRunResult
			s.Require().NoError(done.GetWorkflowResult(&res))
			s.Equal(int64(600), res.Usage.Tokens(), "three writer and three judge visits in all")
			s.InDelta(0.06, res.Usage.CostUSD, 1e-9)
			s.Equal(3, len(s.writerCalls()))
		})
	}
}

// resume runs a new execution seeded with cp, as `tether resume` starts.
func (s *GraphRunSuite) resume(cp *runstore.Checkpoint) *testsuite.TestWorkflowEnvironment {
	env := s.newEnv()
	c := *cp
	env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: c.RunID, Checkpoint: &c})
	s.Require().True(env.IsWorkflowCompleted())
	return env
}

// newEnv is a new execution's environment with the suite's activities.
func (s *GraphRunSuite) newEnv() *testsuite.TestWorkflowEnvironment {
	env := loadTolerant(s.NewTestWorkflowEnvironment())
	env.RegisterWorkflowWithOptions(GraphRun, workflow.RegisterOptions{Name: runapi.WorkflowType})
	env.RegisterActivity(s.acts)
	return env
}

// visitCount is how many visits every fake agent has run.
func (s *GraphRunSuite) visitCount() int {
	n := 0
	for _, a := range s.agents {
		n += len(a.requests())
	}
	return n
}

// editGraph changes the graph cp keeps as edit says.
func editGraph(cp *runstore.Checkpoint, edit func(*graph.Graph)) {
	g := runapi.GraphOrEmpty(cp)
	edit(g)
	if err := runapi.SetGraph(cp, g); err != nil {
		panic(err)
	}
}

func nodeOf(g *graph.Graph, id string) *graph.Node {
	for i := range g.Nodes {
		if g.Nodes[i].ID == id {
			return &g.Nodes[i]
		}
	}
	panic(fmt.Sprintf("no node %q", id))
}

// A spent budget stops an agent visit between two model calls
// (changeBudgetMidVisit): the writer's budget of 250 tokens lets three of
// its five calls of 100 run and refuses the fourth. The run stops
// resumably on the writer, its slot holding the cut turn, its usage 300;
// the path says the visit stopped and why. Resumed with the budget
// raised, the same visit goes on in its own conversation, told why it
// stopped instead of given its prompt again, and the run finishes.
func (s *GraphRunSuite) TestBudgetStopsAVisitMidTurn() {
	src := strings.Replace(persistLoop, `prompt: "draft {{.visit}}"}`, `prompt: "CALLS:5 draft {{.visit}}", budget: {max_tokens: 250}}`, 1)
	s.Require().NotEqual(persistLoop, src)
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(src)})
	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(s.env.GetWorkflowError(), &appErr)
	s.Equal(runapi.ErrTypeBudget, appErr.Type())
	const reason = "the budget of node writer is spent: 300 tokens used, max_tokens is 250"
	s.Contains(appErr.Error(), reason+", in the middle of node writer's visit 1")
	var cp runstore.Checkpoint
	s.Require().NoError(appErr.Details(&cp))
	s.Equal(runstore.StatusFailedResumable, cp.Status)
	s.Require().Len(cp.Cursor, 1)
	s.Equal("writer", cp.Cursor[0].Node, "the cursor stays on the stopped node")
	s.Equal(&runstore.StoppedVisit{Node: "writer", Visit: 1, Reason: reason}, cp.Stopped)
	s.Equal(int64(300), cp.Usage["writer"].Tokens(), "three calls, not the visit's five")
	slot := cp.NodeSessions["writer"]
	s.NotEmpty(slot.StateRef, "the cut turn's session is committed")
	s.NotContains(cp.Outputs, "writer", "a cut turn is not the node's output")
	last := cp.Path[len(cp.Path)-1]
	s.Equal(runstore.StepStopped, last.Status)
	s.Equal(runstore.OutcomeBudget, last.Outcome)
	s.Equal(reason, last.Detail)
	s.Equal(int64(300), last.Usage.Tokens())
	calls := s.writerCalls()
	s.Require().Len(calls, 1)
	s.Equal(int64(250), calls[0].Limits[0].MaxTokens)
	stored := s.latest()
	s.Equal(runstore.StatusFailedResumable, stored.Status)
	s.NotNil(stored.Stopped, "the run store has the stopped visit")

	editGraph(&cp, func(g *graph.Graph) { nodeOf(g, "writer").Budget = &graph.Budget{MaxTokens: 100_000} })
	done := s.resume(&cp)
	s.Require().NoError(done.GetWorkflowError())
	calls = s.writerCalls()
	s.Require().Len(calls, 4, "the stopped visit goes on, then two more")
	s.Equal(1, calls[1].Visit, "under the same number")
	s.Equal(slot.SessionID, calls[1].SessionID, "in its own conversation")
	s.Equal(fmt.Sprintf(activities.BudgetContinue, reason), calls[1].Prompt, "told why it stopped, not given its prompt again")
	s.Equal(2, calls[2].Visit)
	s.Contains(calls[2].Prompt, "draft 2")
	var res runapi.GraphRunResult
	s.Require().NoError(done.GetWorkflowResult(&res))
	s.Equal(4, countNode(res.Path, "writer"), "the stopped step, then writer visits 1, 2 and 3")
}

// countNode counts the steps of node in path.
func countNode(path []runstore.Step, node string) int {
	n := 0
	for _, s := range path {
		if s.Node == node {
			n++
		}
	}
	return n
}

package workflows

import (
	"context"
	"sync/atomic"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/runstore"
)

// notRegisteredFirst makes the first n branch visits fail as a worker of
// an older build, without VisitBranch, fails them; then may more fail in
// a way that may pass; the rest run. It returns how many were made.
func (s *GraphRunSuite) notRegisteredFirst(n, may int) *atomic.Int32 {
	var calls atomic.Int32
	s.env.OnActivity(s.acts.VisitBranch, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, req *activities.VisitRequest) (*activities.VisitResult, error) {
			c := int(calls.Add(1))
			switch {
			case c <= n:
				// As the server hands it back once its own attempts are spent.
				return nil, temporal.NewNonRetryableApplicationError("unable to find activityType=VisitBranch", activityNotRegistered, nil)
			case c <= n+may:
				return nil, temporal.NewNonRetryableApplicationError("the CLI crashed", activities.ErrTypeMayPass, nil)
			}
			return s.acts.VisitBranch(ctx, req)
		})
	return &calls
}

// oneBranch fans out to a single branch, so every branch visit is one
// call.
var oneBranch = graphYAML("one-branch")

// During a rolling upgrade a branch visit that only workers of an older
// build polled waits for an upgraded one, up to maxUpgradeWaits times; the
// waits do not count as restarts of the visit, which still has all of
// its own for failures that may pass.
func (s *GraphRunSuite) TestBranchVisitWaitsForAnUpgradedWorker() {
	calls := s.notRegisteredFirst(5, maxVisitRestarts)
	_, err := s.run(oneBranch, nil)
	s.Require().NoError(err)
	s.Equal(int32(5+maxVisitRestarts+1), calls.Load())

	s.SetupTest()
	calls = s.notRegisteredFirst(maxUpgradeWaits+1, 0)
	_, err = s.run(oneBranch, nil)
	s.requireNodeFailed(err)
	s.Equal(int32(maxUpgradeWaits+1), calls.Load(), "no wait after the last")
}

// A node that fails says which node, which visit and, for an agent, which
// backend.
func (s *GraphRunSuite) TestAFailedNodeSaysWhichVisitFailed() {
	_, err := s.run(graphYAML("fails-agent"), nil)
	s.requireNodeFailed(err)
	s.Contains(err.Error(), `agent node "a" (visit 1, backend scripted): `)

	s.SetupTest()
	_, err = s.run(graphYAML("fails-tool"), nil)
	s.requireNodeFailed(err)
	s.Contains(err.Error(), `tool node "t" (visit 1): `)
	s.NotContains(err.Error(), `agent node "t"`)
}

// A run that fails records it in the run store: the failed status, the
// error, and the step that failed; an end node is visited once, as its
// own step.
func (s *GraphRunSuite) TestAFailedRunIsRecordedAndAnEndIsAStep() {
	_, err := s.run(graphYAML("fails-second"), nil)
	s.requireNodeFailed(err)
	cp := s.latest()
	s.Equal(runstore.StatusFailed, cp.Status)
	s.Contains(cp.Error, "asked to fail")
	last := cp.Path[len(cp.Path)-1]
	s.Equal("b", last.Node)
	s.Equal(1, last.Visit)
	s.Equal("failed", last.Status)
	s.Contains(last.Detail, "asked to fail")
	s.Equal("ok", cp.Path[0].Status)
	for _, w := range s.logs.at("WARN") {
		s.NotContains(w, "could not record the failed run")
	}

	s.SetupTest()
	res, err := s.run(loopGraph, nil)
	s.Require().NoError(err)
	cp = s.latest()
	s.Equal(1, cp.Visits["done"])
	end := res.Path[len(res.Path)-1]
	s.Equal(runstore.Step{Node: "done", Visit: 1, Status: "ok", Outcome: runstore.OutcomeOK, StartedAt: end.StartedAt}, end)
	s.Equal(cp.PathTotal, res.Visits)
}

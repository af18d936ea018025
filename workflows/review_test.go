package workflows

import (
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

var reviewLoop = graphYAML("review-loop")

// A review that arrives before its review node waits (addressed to the
// node, as the GitHub delivery addresses it) is kept and taken by the
// node's next visit; a later one answers the node's pending question; an
// answer that is no verdict is refused.
func (s *GraphRunSuite) TestReviewQueuedUntilItsNodeWaits() {
	var queued, badVerdict, approved error
	var queue []runstore.QueuedReview
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(runapi.UpdateAnswer, "early", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { queued = err }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, runapi.Answer{QuestionID: "review", Text: "changes_requested: add a test for the empty slice"})
		s.env.UpdateWorkflow(runapi.UpdateAnswer, "bad", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { badVerdict = err }, OnAccept: func() { s.Fail("a review without a verdict was taken") },
		}, runapi.Answer{QuestionID: "review", Text: "looks fine I guess"})
	}, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		st := s.queryState()
		s.Require().Len(st.Questions, 1)
		s.Equal("ask-1", st.Questions[0].ID, "the review waited, queued, while the run was elsewhere")
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "go"})
	}, 2*time.Minute)
	s.answerWhenAsked("review-2", "", func() {
		queue = s.latest().Reviews
		s.env.UpdateWorkflow(runapi.UpdateAnswer, "approve", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { approved = err }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, runapi.Answer{QuestionID: "review-2", Text: "approved"})
	})
	res, err := s.runReviewLoop()
	s.Require().NoError(err)
	s.Require().NoError(queued)
	s.Require().NoError(approved)
	s.Require().Error(badVerdict)
	s.Contains(badVerdict.Error(), "not a review verdict")
	s.Equal("ask>writer>review>writer>review>done", pathOf(res))
	calls := s.agents["scripted"].requests()
	s.Require().Len(calls, 2)
	s.Contains(calls[1].Prompt, "write 2 add a test for the empty slice", "the queued review's feedback reached the writer")
	s.Empty(queue, "the review node took the queued review")
	cp := s.latest()
	s.Equal("approved", cp.Outputs["review"]["verdict"])
	s.Empty(cp.Reviews)
}

func (s *GraphRunSuite) runReviewLoop() (*runapi.GraphRunResult, error) {
	return s.run(reviewLoop, nil)
}

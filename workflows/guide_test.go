package workflows

import (
	"strings"
	"time"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/runapi"
)

var guideGraph = graphYAML("guided")

// A note sent with the guide signal goes after the prompt of its node's
// next visit, once, and that visit's path step records it; a note for a
// node that is not an agent, or that the graph lacks, is ignored.
func (s *GraphRunSuite) TestGuideReachesTheNextVisit() {
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(runapi.SignalGuide, runapi.Guide{Node: "again", Text: "keep it under 50 words", By: "ada"})
		s.env.SignalWorkflow(runapi.SignalGuide, runapi.Guide{Node: "ask", Text: "not an agent"})
		s.env.SignalWorkflow(runapi.SignalGuide, runapi.Guide{Node: "nobody", Text: "no such node"})
		s.env.SignalWorkflow(runapi.SignalGuide, runapi.Guide{Node: "again", Text: "   "})
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "yes"})
	}, time.Minute)
	res, err := s.run(guideGraph, nil)
	s.Require().NoError(err)
	s.Equal("writer>ask>again>done", pathOf(res))

	calls := s.agents["scripted"].requests()
	s.Require().Len(calls, 2)
	s.NotContains(calls[0].Prompt, activities.GuidanceIntro)
	s.True(strings.HasSuffix(calls[1].Prompt, "second writer\n\n"+activities.GuidanceIntro+"\n- keep it under 50 words"), calls[1].Prompt)

	step := res.Path[2]
	s.Equal("again", step.Node)
	s.Require().Len(step.Guidance, 1)
	s.Equal("keep it under 50 words", step.Guidance[0].Text)
	s.Equal("ada", step.Guidance[0].By)
	s.NotEmpty(step.Guidance[0].At)
	s.Empty(res.Path[0].Guidance)
	s.Empty(s.latest().Guidance, "a note taken is no longer waiting")
}

// A note sent while no visit of its node is due waits in the checkpoint,
// and the state query shows it.
func (s *GraphRunSuite) TestGuideWaitsInTheCheckpoint() {
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(runapi.SignalGuide, runapi.Guide{Node: "writer", Text: "next time, rhyme"})
	}, time.Minute)
	s.env.RegisterDelayedCallback(func() {
		v, err := s.env.QueryWorkflow(runapi.QueryState)
		s.Require().NoError(err)
		var st runapi.State
		s.Require().NoError(v.Get(&st))
		s.Require().Len(st.Guidance, 1)
		s.Equal("writer", st.Guidance[0].Node)
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "yes"})
	}, 2*time.Minute)
	_, err := s.run(guideGraph, nil)
	s.Require().NoError(err)
	cp := s.latest()
	s.Require().Len(cp.Guidance, 1, "writer was not visited again")
	s.Equal("next time, rhyme", cp.Guidance[0].Text)
}

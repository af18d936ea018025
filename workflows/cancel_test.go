package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/runstore"
)

// A run canceled while it waits for a person ends canceled, and its last
// checkpoint says so: the store, like TetherStatus, no longer calls it
// waiting.
func (s *GraphRunSuite) TestCanceledRunSaysCanceled() {
	s.env.RegisterDelayedCallback(func() {
		s.Equal(runstore.StatusWaiting, s.queryState().Status)
		s.env.CancelWorkflow()
	}, time.Hour)
	_, err := s.run(humanGraph, map[string]any{"title": "x"})
	s.Require().Error(err)
	s.True(temporal.IsCanceledError(err), "%v", err)
	cp := s.latest()
	s.Equal(runstore.StatusCanceled, cp.Status)
	s.Contains(cp.Error, "tether resume run-1")
	s.Equal("ask", cp.Cursor[0].Node, "a resume asks again")
}

// Canceled inside a visit, the run ends canceled, not failed.
func (s *GraphRunSuite) TestCanceledDuringAVisitEndsCanceled() {
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, time.Second)
	_, err := s.run(graphYAML("slow"), nil)
	s.Require().Error(err)
	s.True(temporal.IsCanceledError(err), "%v", err)
	s.Equal(runstore.StatusCanceled, s.latest().Status)
}

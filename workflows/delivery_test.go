package workflows

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// runInputGraph: an inherit node after a node whose edge maps nothing
// (with: {}) or only other keys, in a run whose inputs carry a _session_id.
var runInputGraph = graphYAML("run-input")

// ADR-089 rule 1: only an incoming edge's own mapping delivers a session
// id. A run input _session_id naming the very session the source served
// (claude_code-s1, a's), with an edge that maps nothing or maps only other
// keys, does not make the inherit node resume it: it runs fresh, with no
// session keys, and its output says which rule failed.
func (s *GraphRunSuite) TestRunInputSessionIDIsNotADelivery() {
	for _, edge := range []string{"{from: a, to: b}", "{from: a, to: b, with: {topic: output.text}}"} {
		s.Run(edge, func() {
			s.SetupTest()
			_, err := s.run(strings.Replace(runInputGraph, "{from: a, to: b}", edge, 1), map[string]any{agent.SessionIDKey: "claude_code-s1"})
			s.Require().NoError(err)
			calls := s.writer().requests()
			s.Require().Len(calls, 2)
			s.Equal("claude_code-s1", s.latest().Outputs["a"][agent.SessionIDKey], "a served the session the run input names")
			s.Empty(calls[1].SessionID, "b does not resume it")
			s.NotContains(calls[1].Input, agent.SessionIDKey)
			s.NotContains(calls[1].Input, agent.SessionFingerprintKey)
			note, _ := s.latest().Outputs["b"][activities.SessionNoteKey].(string)
			s.Contains(note, "the inbound session claude_code-s1 was not resumed")
			s.Contains(note, "rule 1 failed: no incoming edge's own mapping delivered it")
		})
	}
}

// The same edge mapping the id itself delivers it: b resumes a's session
// and says nothing.
func (s *GraphRunSuite) TestAnEdgeMappingTheSessionIDDeliversIt() {
	s.requireBResumesTheRunInputsSession(strings.Replace(runInputGraph, "{from: a, to: b}", "{from: a, to: b, with: {_session_id: output._session_id}}", 1))
}

// Runs recorded before changeEdgeDelivery took the final input's id as
// delivered, so there the run input resumes the session (what
// edge-delivery-before.json recorded).
func (s *GraphRunSuite) TestRunInputSessionIDBeforeEdgeDelivery() {
	s.recordedBefore(changeEdgeDelivery, versionEdgeDelivery)
	s.requireBResumesTheRunInputsSession(runInputGraph)
}

// requireBResumesTheRunInputsSession runs g with a run input _session_id
// naming a's session: b resumes it and says nothing.
func (s *GraphRunSuite) requireBResumesTheRunInputsSession(g string) {
	_, err := s.run(g, map[string]any{agent.SessionIDKey: "claude_code-s1"})
	s.Require().NoError(err)
	calls := s.writer().requests()
	s.Require().Len(calls, 2)
	s.Equal("claude_code-s1", calls[1].SessionID)
	s.NotContains(s.latest().Outputs["b"], activities.SessionNoteKey)
}

// A cursor records what its edge's mapping delivered; one recorded
// before it did counts its input's id only when an edge from its source
// to it maps a _session_id.
func TestDeliveredFollowsTheEdgesMapping(t *testing.T) {
	g, err := graph.Parse([]byte(graphYAML("delivery")), "d.yaml")
	require.NoError(t, err)
	r := &runImpl{g: g}
	in := map[string]any{agent.SessionIDKey: "s1"}
	mapped, none := "s2", ""
	for _, c := range []struct {
		cur  runstore.Cursor
		want string
	}{
		{runstore.Cursor{Node: "b", From: "a", Input: in, Delivered: &mapped}, "s2"},
		{runstore.Cursor{Node: "b", From: "a", Input: in, Delivered: &none}, ""},
		{runstore.Cursor{Node: "b", From: "a", Input: in}, "s1"},
		{runstore.Cursor{Node: "c", From: "a", Input: in}, ""},
		{runstore.Cursor{Node: "b", From: "c", Input: in}, ""},
	} {
		assert.Equal(t, c.want, r.delivered(c.cur), "%+v", c.cur)
	}
}

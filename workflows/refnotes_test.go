package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stretchr/testify/mock"
	sdkpb "go.temporal.io/api/sdk/v1"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blobref"
)

// plantedKey is a blob key of the run, as a store's error or an inbound
// _session_id carries it into a note.
const plantedKey = "runs/run-1/sessions/writer/01J00000000000000000000BEN"

// storeFault is the writer's visit failing as a store fault does: its
// error quotes the key it failed on.
func storeFault() error {
	return fmt.Errorf("read session blob for node %q: blob: get %s: input/output error", "writer", plantedKey)
}

// noRefIn fails for a value whose JSON holds a blob key.
func (s *GraphRunSuite) noRefIn(what string, v any) {
	s.T().Helper()
	b, err := json.Marshal(v)
	s.Require().NoError(err)
	s.False(blobref.In(string(b)), "%s names a blob key: %s", what, b)
}

// A visit the run starts again after a store fault is told what failed,
// without the key the fault quoted (changeRefFreeNotes): neither the
// cause the workflow passes on, nor the agent's prompt, the visit's
// output, its loop snapshots or the run's details in the Web UI hold it.
func (s *GraphRunSuite) TestAStoreFaultsKeyIsNotPassedOn() {
	s.withDetails()
	reqs := s.visitRequests()
	s.wipeOnJudge(nil)
	s.failVisits(1, storeFault)
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	var told int
	for _, r := range reqs() {
		if r.RetryOf != nil {
			told++
			s.Contains(r.RetryOf.Cause, "it failed: ")
			s.Contains(r.RetryOf.Cause, "a session blob of the run", "the cause still says what failed")
			s.noRefIn("the cause passed on", r.RetryOf)
		}
	}
	s.Equal(1, told)
	for _, c := range s.writerCalls() {
		s.noRefIn("the writer's prompt", c.Prompt)
	}
	cp := s.latest()
	s.noRefIn("the outputs", cp.Outputs)
	s.noRefIn("the loop snapshots", cp.LoopSnapshots)
	s.Contains(s.details(), "Visits that ran again")
	s.noRefIn("the run's details", s.details())
}

// Runs recorded before changeRefFreeNotes passed the failure's message on
// as it was.
func (s *GraphRunSuite) TestAStoreFaultsKeyBeforeRefFreeNotes() {
	s.recordedBefore(changeRefFreeNotes, versionRefFreeNotes)
	reqs := s.visitRequests()
	s.failVisits(1, storeFault)
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	var causes []string
	for _, r := range reqs() {
		if r.RetryOf != nil {
			causes = append(causes, r.RetryOf.Cause)
		}
	}
	s.Require().Len(causes, 1)
	s.Contains(causes[0], plantedKey)
}

// An inbound _session_id that names a blob key (a literal, or a tool's
// output mapped onto the edge) is not resumed; the note that says so does
// not quote the key.
func (s *GraphRunSuite) TestAnInboundRefIsNotQuoted() {
	g := strings.Replace(runInputGraph, "{from: a, to: b}", `{from: a, to: b, with: {_session_id: '"`+plantedKey+`"'}}`, 1)
	_, err := s.run(g, nil)
	s.Require().NoError(err)
	note, _ := s.latest().Outputs["b"][activities.SessionNoteKey].(string)
	s.Contains(note, "the inbound session a session blob of the run was not resumed")
	s.noRefIn("b's output", s.latest().Outputs["b"])

	s.SetupTest()
	s.recordedBefore(changeRefFreeNotes, versionRefFreeNotes)
	_, err = s.run(g, nil)
	s.Require().NoError(err)
	note, _ = s.latest().Outputs["b"][activities.SessionNoteKey].(string)
	s.Contains(note, plantedKey, "runs recorded before quoted it")
}

// A retry note a worker of an older build wrote as it was is hidden in
// the run's details all the same.
func (s *GraphRunSuite) TestOldWorkersRetryNoteIsHiddenInTheDetails() {
	s.withDetails()
	s.env.OnActivity(s.acts.Visit, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, req *activities.VisitRequest) (*activities.VisitResult, error) {
			res, err := s.acts.Visit(ctx, req)
			if err == nil && req.NodeID == "writer" && req.Visit == 2 {
				res.Output[agent.RetryNoteKey] = "an earlier attempt failed: blob: get " + plantedKey
			}
			return res, err
		})
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	s.Contains(s.details(), "writer visit 2: an earlier attempt failed: blob: get a session blob of the run")
}

// withDetails makes the run keep its details (which it does once its
// worker registered the search attributes) for this test.
func (s *GraphRunSuite) withDetails() {
	SetSearchAttributesReady(true)
	s.T().Cleanup(func() { SetSearchAttributesReady(false) })
}

// details is the run's details as the Web UI shows them.
func (s *GraphRunSuite) details() string {
	v, err := s.env.QueryWorkflow("__temporal_workflow_metadata")
	s.Require().NoError(err)
	var md sdkpb.WorkflowMetadata
	s.Require().NoError(v.Get(&md))
	return md.GetCurrentDetails()
}

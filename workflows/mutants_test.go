package workflows

import (
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"
)

// Tests that pin down behaviour a mutation run of this package found
// unpinned (docs/testing.md, "Lived mutants").

// The lost-attempt-blobs change is asked only by a visit that left blobs
// behind: a run that loses none records no marker for the change, so its
// history is what the build before the change recorded for it.
func (s *GraphRunSuite) TestOnlyAVisitWithLostBlobsAsksForTheirDeletion() {
	for _, c := range []struct {
		name string
		arm  func()
		lost bool
	}{
		{"nothing lost", func() {}, false},
		{"a pack that landed and failed", func() { s.store.arm("/sessions/writer/", 1, true) }, true},
	} {
		s.Run(c.name, func() {
			s.SetupTest()
			asked := 0
			s.env.OnGetVersion(changeBaseline, workflow.DefaultVersion, versionBaseline).Return(workflow.DefaultVersion) // recorded before the baseline
			s.env.OnGetVersion(changeLostAttemptBlobs, workflow.DefaultVersion, versionLostAttemptBlobs).
				Run(func(mock.Arguments) { asked++ }).Return(workflow.Version(versionLostAttemptBlobs))
			c.arm()
			_, err := s.run(persistLoop, nil)
			s.Require().NoError(err)
			if c.lost {
				s.Positive(asked, "a visit that lost a blob asks")
				s.Require().NotEmpty(s.store.landedFailed)
				s.Contains(s.store.deleted, s.store.landedFailed[0])
				return
			}
			s.Zero(asked)
		})
	}
}

// Once the visit that was answered is committed, the pause blob it
// resumed from is superseded: the run deletes it after the required
// checkpoint (the blobs of earlier questions go when the next pause lands).
func (s *GraphRunSuite) TestAnsweredPauseBlobIsDeletedAfterTheCommit() {
	var last string
	s.answerWhenAsked("writer-1-q1", "1", func() {})
	s.answerWhenAsked("writer-1-q2", "2", func() { last = s.latest().Pause.BackendSessionStateRef })
	_, err := s.run(twoAsks, nil)
	s.Require().NoError(err)
	s.Require().NotEmpty(last, "the run paused on a second blob")
	s.Contains(s.store.deletedKeys(), last)
	s.False(s.exists(last), "the answered pause blob is gone")
}

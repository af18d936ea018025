package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runapi"
)

// failVisits makes the writer's visit 2 fail n times with the error mk
// returns, then pass.
func (s *GraphRunSuite) failVisits(n int, mk func() error) {
	failed := 0
	s.writer().fail = func(_ int, req agent.Request) error {
		if req.NodeID != "writer" || req.Visit != 2 || failed >= n {
			return nil
		}
		failed++
		return mk()
	}
}

func workerStopping() error {
	return temporal.NewApplicationError("worker w1 stopped during the visit", activities.ErrTypeWorkerStopping)
}

func mayPassErr() error { return errors.New("the CLI crashed") }

// A worker lost under a visit (here: handing it back as it stops) is not
// the visit's fault: the server starts it again, as often as
// maxLostWorkerRetries, and the conversation continues.
func (s *GraphRunSuite) TestLostWorkersAreRetriedByTheServer() {
	s.wipeOnJudge(nil)
	s.failVisits(maxLostWorkerRetries, workerStopping)
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	calls := s.writerCalls()
	s.Require().Len(calls, 3+maxLostWorkerRetries)
	s.Equal("claude_code-s1", calls[len(calls)-1].SessionID, "the visit after the lost ones continued the conversation")
}

// A visit that kills every worker it lands on still ends: after
// maxLostWorkerRetries the node fails.
func (s *GraphRunSuite) TestLostWorkersAreRetriedABoundedNumberOfTimes() {
	s.wipeOnJudge(nil)
	s.failVisits(maxLostWorkerRetries+1, workerStopping)
	_, err := s.run(persistLoop, nil)
	s.requireNodeFailed(err)
	s.Len(s.writerCalls(), 2+maxLostWorkerRetries)
}

// A failure that may pass is judged by the run: it starts the visit again
// after a pause, with new keys, up to maxVisitRestarts times, whatever the
// server did about lost workers before.
func (s *GraphRunSuite) TestFailuresThatMayPassAreRestartedByTheRun() {
	s.wipeOnJudge(nil)
	s.failVisits(maxVisitRestarts, mayPassErr)
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	s.Len(s.writerCalls(), 3+maxVisitRestarts, "never retried by the server as well")

	s.SetupTest()
	s.wipeOnJudge(nil)
	s.failVisits(maxVisitRestarts+1, mayPassErr)
	_, err = s.run(persistLoop, nil)
	s.requireNodeFailed(err)
	s.Len(s.writerCalls(), 2+maxVisitRestarts)
}

// Runs recorded before server-retry keep their bound: a lost worker counts
// as one of the maxVisitRestarts restarts, each started by the workflow.
func (s *GraphRunSuite) TestLostWorkersBeforeServerRetry() {
	s.recordedBefore(changeServerRetry, versionServerRetry)
	s.wipeOnJudge(nil)
	s.failVisits(maxVisitRestarts+1, workerStopping)
	_, err := s.run(persistLoop, nil)
	s.requireNodeFailed(err)
	s.Len(s.writerCalls(), 2+maxVisitRestarts)
}

func (s *GraphRunSuite) requireNodeFailed(err error) {
	s.T().Helper()
	s.Require().Error(err)
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(err, &appErr), "%v", err)
	s.Equal(runapi.ErrTypeNodeFailed, appErr.Type(), fmt.Sprint(err))
}

// A session pack that landed but reported an error leaves a blob no
// checkpoint names: once the visit (run fresh next time) is committed, the
// run deletes it rather than leaving it for `tether delete`.
func (s *GraphRunSuite) TestPackThatLandedAndFailedIsDeleted() {
	s.store.arm("/sessions/writer/", 1, true)
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	s.Require().NotEmpty(s.store.landedFailed)
	for _, key := range s.store.landedFailed {
		s.Contains(s.store.deleted, key)
		_, err := s.store.Stat(context.Background(), key)
		s.ErrorIs(err, blob.ErrNotFound, key)
	}
}

// A visit the run started again after a failure that may pass, and one
// the server started again after its worker was lost, delete the keys of
// their failed attempts once committed; a visit that succeeded at once
// deletes nothing more.
func (s *GraphRunSuite) TestFailedAttemptsKeysAreDeleted() {
	for _, tc := range []struct {
		name string
		mk   func() error
		n    int
	}{{"restart", mayPassErr, maxVisitRestarts}, {"lost worker", workerStopping, 2}} {
		s.Run(tc.name, func() {
			s.SetupTest()
			s.failVisits(tc.n, tc.mk)
			_, err := s.run(persistLoop, nil)
			s.Require().NoError(err)
			var sessions, pauses int
			for _, key := range s.store.deleted {
				switch {
				case strings.Contains(key, "/sessions/writer/pause/"):
					pauses++
				case strings.Contains(key, "/sessions/writer/"):
					sessions++
				}
			}
			// Superseded slots are deleted too (one per later writer visit).
			s.GreaterOrEqual(sessions, tc.n, "the failed attempts' session keys: %v", s.store.deleted)
			s.GreaterOrEqual(pauses, tc.n, "the failed attempts' pause keys: %v", s.store.deleted)
		})
	}
	s.Run("none failed", func() {
		s.SetupTest()
		_, err := s.run(persistLoop, nil)
		s.Require().NoError(err)
		for _, key := range s.store.deleted {
			s.NotContains(key, "/pause/", "no pause key is deleted when no attempt failed")
		}
	})
}

package workflows

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// failStopAt runs src with SessionHistory -1 (a superseded slot's blob is
// deleted right after the checkpoint that supersedes it, so the only
// thing that keeps it is that checkpoint not landing), letting the first
// `landed` checkpoints land and failing every one after. It returns the
// fail-stop's checkpoint and the writer's slot in the last checkpoint that
// landed.
func (s *GraphRunSuite) failStopAt(src string, landed int) (runstore.Checkpoint, runstore.NodeSessionSlot) {
	s.store.arm("/checkpoints/", landed, false)
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(src), Options: runapi.Options{SessionHistory: -1}})
	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(s.env.GetWorkflowError(), &appErr)
	s.Require().Equal(runapi.ErrTypeResumable, appErr.Type(), appErr.Error())
	var cp runstore.Checkpoint
	s.Require().NoError(appErr.Details(&cp))
	return cp, s.latest().NodeSessions["writer"]
}

// exists reports whether key is in the store.
func (s *GraphRunSuite) exists(key string) bool {
	_, err := s.store.Stat(context.Background(), key)
	return err == nil
}

// ADR-089 row 12 at visits 2 and 3, where an old slot and its blob exist:
// the required checkpoint after a persist visit fails. The fail-stop's
// checkpoint (FailRunResumable) holds the new slot, never the old one;
// no edge was taken; the old slot's blob and the new one are both kept
// (nothing is deleted without a checkpoint that landed); and a resume
// continues visit N+1 of the new conversation, which holds visit N.
func (s *GraphRunSuite) TestSlotCommitFailStopAtLaterVisits() {
	for _, n := range []int{2, 3} {
		s.Run(fmt.Sprintf("visit %d", n), func() {
			s.SetupTest()
			// Each writer and judge visit lands one checkpoint.
			cp, old := s.failStopAt(persistLoop, 2*(n-1))
			s.Require().NotEmpty(old.StateRef, "visit %d's slot landed", n-1)
			s.Equal(n, cp.Visits["writer"])
			s.Equal(n-1, cp.Visits["judge"], "no edge was taken after the failed checkpoint")
			s.Require().Len(cp.Cursor, 1)
			s.Equal("writer", cp.Cursor[0].Node)
			slot := cp.NodeSessions["writer"]
			s.Equal("claude_code-s1", slot.SessionID)
			s.NotEqual(old.StateRef, slot.StateRef, "the fail-stop carries the new slot, not the old")
			s.NotEqual(old.Digest, slot.Digest)
			s.Contains(cp.Outputs["writer"]["text"], fmt.Sprintf("turn %d of claude_code-s1", n))
			s.True(s.exists(old.StateRef), "the old slot's blob is kept")
			s.True(s.exists(slot.StateRef), "the new slot's blob is kept")
			s.NotContains(s.store.deletedKeys(), old.StateRef, "no delete without a checkpoint that landed")
			s.NotContains(s.store.deletedKeys(), slot.StateRef)

			// tether resume, on a worker whose root is empty.
			s.store.disarm()
			s.writer().wipe()
			done := s.resume(&cp)
			s.Require().NoError(done.GetWorkflowError())
			calls := s.writerCalls()
			s.Require().Len(calls, n+1)
			s.Equal("claude_code-s1", calls[n].SessionID)
			var want []string
			for i := 1; i <= n+1; i++ {
				want = append(want, fmt.Sprintf("draft %d", i))
			}
			var resumed string
			for _, ls := range s.latest().LoopSnapshots {
				if ls.Node == "writer" && ls.Visit == n+1 {
					resumed, _ = ls.Output["text"].(string)
				}
			}
			if resumed == "" {
				resumed, _ = s.latest().Outputs["writer"]["text"].(string)
			}
			s.Equal(fmt.Sprintf("turn %d of claude_code-s1: %s", n+1, strings.Join(want, " | ")), resumed,
				"visit %d continued the conversation that holds visit %d", n+1, n)
		})
	}
}

// askOnSecond asks the user in the writer's second visit.
var askOnSecond = strings.Replace(persistLoop, `prompt: "draft {{.visit}}"`, `prompt: "draft {{.visit}}{{if eq .visit 2}} ASK: ok?{{end}}"`, 1)

// The same after an in-node ask_user in visit 2: the checkpoint that
// would commit the answered visit fails. The pause blob and the old
// slot's blob are both kept, as is the new slot's, and the fail-stop
// holds the new slot.
func (s *GraphRunSuite) TestSlotCommitFailStopAfterAnAnswerKeepsThePauseBlob() {
	s.Require().NotEqual(persistLoop, askOnSecond)
	var pause string
	s.answerWhenAsked("writer-2-q1", "yes", func() { pause = s.latest().Pause.BackendSessionStateRef })
	// writer 1, judge 1 and the pause checkpoint of writer 2 land.
	cp, old := s.failStopAt(askOnSecond, 3)
	s.Require().NotEmpty(pause)
	slot := cp.NodeSessions["writer"]
	s.NotEqual(old.StateRef, slot.StateRef)
	s.Equal("claude_code-s1", slot.SessionID)
	s.Nil(cp.Pause, "the answer was taken; the new slot holds it")
	for _, key := range []string{pause, old.StateRef, slot.StateRef} {
		s.True(s.exists(key), "kept: %s", key)
		s.NotContains(s.store.deletedKeys(), key)
	}
	s.Contains(cp.Outputs["writer"]["text"], "ANSWER:yes")
}

// ADR-089 rows 19 and 20 in the run, on the worker that still holds the
// session live: a rewind to the writer's first visit plans that visit's
// slot, whose blob is gone, while the worker holds the later, 3-turn
// conversation. The writer runs fresh, with no session id, and says why;
// it does not fall through to the live session.
func (s *GraphRunSuite) TestRewindToAMissingSlotBlobRunsFreshOnTheSameWorker() {
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	target, newest := s.firstCheckpoint(afterFirstWriterVisit)
	s.Require().NotNil(target)
	ref := target.NodeSessions["writer"].StateRef
	s.Require().NoError(s.store.Store.Delete(context.Background(), ref))
	root := s.acts.StateDir + "/runs/run-1/" + "claude_code"
	s.Require().Len(s.writer().disks[root]["claude_code-s1"], 3, "the worker holds the session live")
	before := len(s.writerCalls())

	cp := *target
	cp.Seq = newest
	done := s.resume(&cp)
	s.Require().NoError(done.GetWorkflowError())
	calls := s.writerCalls()[before:]
	s.Require().NotEmpty(calls)
	s.Empty(calls[0].SessionID, "the live session is not resumed")
	s.NotContains(calls[0].Input, "_session_id")
	var visit2 map[string]any
	for _, ls := range s.latest().LoopSnapshots {
		if ls.Node == "writer" && ls.Visit == 2 {
			visit2 = ls.Output
		}
	}
	s.Require().NotNil(visit2)
	s.Contains(visit2["_session_note"], "gone from the store")
	s.Contains(visit2["text"], "turn 1 of claude_code-s2")
	s.noRefs(s.latest())
}

// noRefs checks that no output and no loop snapshot of cp holds a blob
// key anywhere (ADR-089: no StateRef on outputs or loop snapshots).
func (s *GraphRunSuite) noRefs(cp *runstore.Checkpoint) {
	outs := append([]map[string]any(nil), snapshotOutputs(cp)...)
	for _, id := range sortedKeys(cp.Outputs) {
		outs = append(outs, cp.Outputs[id])
	}
	for _, o := range outs {
		s.NotContains(mustJSON(o), "/sessions/", "%v", o)
	}
}

// Row 2, persist inside a fan-out, is refused at run time on both fan-out
// paths: branch workspaces, and the older one of runs recorded before them
// (fanoutShared, with one-trip or two-activity visits), before the persist
// node is ever visited.
func (s *GraphRunSuite) TestPersistInFanoutBranchFailsOnEveryPath() {
	for _, path := range []struct {
		name   string
		change string
		max    workflow.Version
	}{
		{"branch workspaces", "", 0},
		{"shared fan-out", changeBranchWorkspaces, versionBranchWorkspaces},
		{"shared fan-out, two-activity visits", changeOneTripVisit, versionOneTripVisit},
	} {
		s.Run(path.name, func() {
			s.SetupTest()
			if path.change != "" {
				s.recordedBefore(path.change, path.max)
			}
			_, err := s.run(strings.Replace(fanoutGraph, "{id: left, kind: agent, backend: scripted,", "{id: left, kind: agent, backend: scripted, session: persist,", 1), nil)
			var appErr *temporal.ApplicationError
			s.Require().ErrorAs(err, &appErr)
			s.Equal(runapi.ErrTypeGraph, appErr.Type())
			s.Contains(appErr.Error(), `node "left" has session: persist inside a fan-out branch`)
			for _, r := range s.agents["scripted"].requests() {
				s.NotEqual("left", r.NodeID, "the persist node never ran")
			}
			s.Equal(graph.SessionPersist, nodeOf(runapi.GraphOrEmpty(s.latest()), "left").Session)
		})
	}
}

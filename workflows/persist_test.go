package workflows

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/runapi"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// The tests in this file are ADR-089's mandatory tests that concern the
// workflow (docs/adr-089.md maps each row to its test). They run GraphRun
// with the real activities, the real run store on a memory blob store, and
// fakeAgent, whose "disk" a test can wipe like a recycled worker's.

var persistLoop = graphYAML("persist-loop")

func (s *GraphRunSuite) writer() *fakeAgent { return s.agents["claude_code"] }

func (s *GraphRunSuite) writerCalls() []agent.Request {
	var out []agent.Request
	for _, r := range s.writer().requests() {
		if r.NodeID == "writer" {
			out = append(out, r)
		}
	}
	return out
}

// wipeOnJudge empties the writer's live roots whenever the judge runs, i.e.
// between two writer visits, as if each visit landed on a new pod.
func (s *GraphRunSuite) wipeOnJudge(also func()) {
	s.agents["scripted"].onExecute = func(agent.Request) {
		s.writer().wipe()
		if also != nil {
			also()
		}
	}
}

// checkpoints returns run-1's checkpoints, oldest first, and the
// sequence number of the newest, which a resume from any of them takes.
func (s *GraphRunSuite) checkpoints() (all []*runstore.Checkpoint, newest int64) {
	infos, err := s.runs.List(context.Background(), "run-1")
	s.Require().NoError(err)
	for _, info := range infos {
		cp, err := s.runs.Get(context.Background(), "run-1", info.Seq)
		s.Require().NoError(err)
		all = append(all, cp)
		newest = info.Seq
	}
	return all, newest
}

// firstCheckpoint returns run-1's oldest checkpoint that match holds for
// (nil when none does) and the sequence number of the newest.
func (s *GraphRunSuite) firstCheckpoint(match func(*runstore.Checkpoint) bool) (*runstore.Checkpoint, int64) {
	all, newest := s.checkpoints()
	for _, cp := range all {
		if match(cp) {
			return cp, newest
		}
	}
	return nil, newest
}

// afterFirstWriterVisit matches the checkpoint taken after the writer's
// and the judge's first visits.
func afterFirstWriterVisit(cp *runstore.Checkpoint) bool {
	return cp.Visits["writer"] == 1 && cp.Visits["judge"] == 1
}

func (s *GraphRunSuite) checkpointJSON() string {
	cps, _ := s.checkpoints()
	var all []string
	for _, cp := range cps {
		b, err := json.Marshal(cp)
		s.Require().NoError(err)
		all = append(all, string(b))
	}
	return strings.Join(all, "\n")
}

// Visit 1 fresh, visit 2 same id, no _session_id in with; wiped dir between
// completed visits.
func (s *GraphRunSuite) TestPersistResumesOwnSlotAcrossWipedRoots() {
	s.wipeOnJudge(nil)
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	calls := s.writerCalls()
	s.Require().Len(calls, 3)
	s.Empty(calls[0].SessionID, "visit 1 is fresh")
	s.Equal("claude_code-s1", calls[1].SessionID)
	s.Equal("claude_code-s1", calls[2].SessionID)
	cp := s.latest()
	s.Contains(cp.Outputs["writer"]["text"], "turn 3 of claude_code-s1: draft 1 | draft 2 | draft 3")
	slot := cp.NodeSessions["writer"]
	s.Equal(runstore.NodeSessionSlot{Backend: "claude_code", SessionID: "claude_code-s1", Fingerprint: "fp-claude_code", StateRef: slot.StateRef, Digest: slot.Digest, Size: slot.Size}, slot)
	s.Positive(slot.Size, "the slot records the size of its blob")
	s.Regexp(`^sha256:[0-9a-f]{64}$`, slot.Digest, "the slot records the digest of its blob")
	s.NotContains(s.checkpointJSON(), "_session_state")
}

// Completed-slot Get/unpack fail: stripped id/fingerprint, no SessionID.
func (s *GraphRunSuite) TestMissingSlotBlobRunsFresh() {
	s.wipeOnJudge(func() {
		cp, err := s.runs.Latest(context.Background(), "run-1")
		s.Require().NoError(err)
		s.Require().NoError(s.store.Store.Delete(context.Background(), cp.NodeSessions["writer"].StateRef))
	})
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	for i, c := range s.writerCalls() {
		s.Empty(c.SessionID, "visit %d", i+1)
		s.NotContains(c.Input, agent.SessionIDKey)
		s.NotContains(c.Input, agent.SessionFingerprintKey)
	}
}

func (s *GraphRunSuite) TestCorruptSlotBlobRunsFresh() {
	s.wipeOnJudge(func() {
		cp, err := s.runs.Latest(context.Background(), "run-1")
		s.Require().NoError(err)
		ref := cp.NodeSessions["writer"].StateRef
		s.Require().NoError(s.store.Store.Delete(context.Background(), ref))
		s.Require().NoError(blob.PutBytes(context.Background(), s.store.Store, ref, []byte("not an archive")))
	})
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	for _, c := range s.writerCalls() {
		s.Empty(c.SessionID)
	}
}

var askGraph = graphYAML("ask")

// ask_user carries the session to a pause ref; the checkpoint has the ref,
// not bytes; a wiped dir between ask and answer resumes from the pause ref,
// not NodeSessions; success commits a slot and deletes the pause blob.
func (s *GraphRunSuite) TestAskUserPausesOnPauseRef() {
	var pauseRef string
	s.env.RegisterDelayedCallback(func() {
		cp := s.latest()
		s.Equal(runstore.StatusWaiting, cp.Status)
		s.Require().NotNil(cp.Pause)
		pauseRef = cp.Pause.BackendSessionStateRef
		s.Contains(pauseRef, "/writer/pause/")
		s.Empty(cp.NodeSessions, "an in-flight ask_user is never a completed slot")
		data, err := blob.GetBytes(context.Background(), s.store, pauseRef)
		s.Require().NoError(err)
		s.Contains(string(data), "draft ASK: one")
		s.Contains(string(data), `"turns"`)
		s.NotContains(s.checkpointJSON(), `"turns"`, "no session bytes in a checkpoint")
		st := s.queryState()
		s.Require().Len(st.Questions, 1)
		s.NotContains(mustJSON(st), pauseRef, "no ref in a query result")
		s.writer().wipe()
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: st.Questions[0].ID, Text: "blue"})
	}, time.Hour)
	_, err := s.run(askGraph, nil)
	s.Require().NoError(err)
	calls := s.writerCalls()
	s.Require().Len(calls, 2)
	s.Equal("claude_code-s1", calls[1].SessionID)
	s.Require().NotNil(calls[1].Answer)
	s.Equal("blue", calls[1].Answer.Text)
	s.Equal("tool-1", calls[1].Answer.PendingToolUseID)
	cp := s.latest()
	s.Nil(cp.Pause)
	s.Contains(cp.Outputs["writer"]["text"], "turn 2 of claude_code-s1: draft ASK: one | ANSWER:blue")
	s.NotEmpty(cp.NodeSessions["writer"].StateRef)
	s.Contains(s.store.deletedKeys(), pauseRef)
}

// Non-persist reInvoke success: no NodeSessions entry; the pause blob goes.
func (s *GraphRunSuite) TestNonPersistAskUserGetsNoSlot() {
	var pauseRef string
	s.env.RegisterDelayedCallback(func() {
		pauseRef = s.latest().Pause.BackendSessionStateRef
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "writer-1-q1", Text: "x"})
	}, time.Hour)
	_, err := s.run(strings.Replace(askGraph, "session: persist", "session: fresh", 1), nil)
	s.Require().NoError(err)
	s.Empty(s.latest().NodeSessions)
	s.NotEmpty(pauseRef)
	s.Contains(s.store.deletedKeys(), pauseRef)
}

// Pause-ref Get/unpack fail: stripped id/fingerprint, no SessionID.
func (s *GraphRunSuite) TestMissingPauseBlobRunsFresh() {
	s.env.RegisterDelayedCallback(func() {
		ref := s.latest().Pause.BackendSessionStateRef
		s.Require().NoError(s.store.Store.Delete(context.Background(), ref))
		s.writer().wipe()
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "writer-1-q1", Text: "x"})
	}, time.Hour)
	_, err := s.run(askGraph, nil)
	s.Require().NoError(err)
	calls := s.writerCalls()
	s.Require().Len(calls, 2)
	s.Empty(calls[1].SessionID)
	s.NotContains(calls[1].Input, agent.SessionIDKey)
}

var twoAsks = graphYAML("two-asks")

// Two ask_users: success deletes A only after B is committed.
func (s *GraphRunSuite) TestSecondAskDeletesFirstPauseBlobAfterCommit() {
	var a, b string
	s.answerWhenAsked("writer-1-q1", "1", func() { a = s.latest().Pause.BackendSessionStateRef })
	s.answerWhenAsked("writer-1-q2", "2", func() {
		b = s.latest().Pause.BackendSessionStateRef
		s.NotEqual(a, b)
		s.Contains(s.store.deletedKeys(), a, "A is deleted once the checkpoint naming B is durable")
		s.NotContains(s.store.deletedKeys(), b)
	})
	_, err := s.run(twoAsks, nil)
	s.Require().NoError(err)
	s.NotEmpty(b)
	s.Contains(s.store.deletedKeys(), b)
}

// answerWhenAsked answers qid as soon as the run asks it, after running
// before (which sees the run paused on that question).
func (s *GraphRunSuite) answerWhenAsked(qid, text string, before func()) {
	var try func()
	try = func() {
		for _, q := range s.queryState().Questions {
			if q.ID == qid {
				before()
				s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: qid, Text: text})
				return
			}
		}
		s.env.RegisterDelayedCallback(try, time.Minute)
	}
	s.env.RegisterDelayedCallback(try, time.Minute)
}

// PauseRun writes the checkpoint then returns an error: B is not deleted,
// and neither is A.
func (s *GraphRunSuite) TestPauseCheckpointErrorKeepsBothBlobs() {
	for _, landed := range []bool{true, false} {
		s.SetupTest()
		var a, b string
		s.answerWhenAsked("writer-1-q1", "1", func() {
			a = s.latest().Pause.BackendSessionStateRef
			// The next checkpoint (the one naming B) fails.
			s.store.arm("/checkpoints/", 0, landed)
		})
		s.answerWhenAsked("writer-1-q2", "2", func() {
			keys, err := s.store.List(context.Background(), "")
			s.Require().NoError(err)
			for _, k := range keys {
				if strings.Contains(k.Key, "/pause/") && k.Key != a {
					b = k.Key
				}
			}
			s.NotContains(s.store.deletedKeys(), a, "landed=%v", landed)
			s.NotContains(s.store.deletedKeys(), b, "landed=%v", landed)
			s.store.disarm()
		})
		_, err := s.run(twoAsks, nil)
		s.Require().NoError(err)
		s.NotEmpty(b, "the run waited on B even though its pause checkpoint failed")
		s.NotContains(s.store.deletedKeys(), a, "A is never deleted after an uncertain pause checkpoint")
	}
}

// Persist success then SaveCheckpoint fail: no edge taken; the resumable
// failure carries a checkpoint with the new slot; resume re-executes from
// that slot, on an empty root.
func (s *GraphRunSuite) TestSlotCommitFailStopThenResume() {
	s.store.arm("/checkpoints/", 0, false)
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(persistLoop)})
	err := s.env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(err, &appErr)
	s.Equal(runapi.ErrTypeResumable, appErr.Type())
	var cp runstore.Checkpoint
	s.Require().NoError(appErr.Details(&cp))
	s.Equal(runstore.StatusFailedResumable, cp.Status)
	s.Require().Len(cp.Cursor, 1)
	s.Equal("writer", cp.Cursor[0].Node, "no edge was selected")
	slot := cp.NodeSessions["writer"]
	s.Equal("claude_code-s1", slot.SessionID)
	s.NotEmpty(slot.StateRef)
	_, err = s.store.Stat(context.Background(), slot.StateRef)
	s.Require().NoError(err, "the new slot's blob is kept")
	for _, c := range s.agents["scripted"].requests() {
		s.NotEqual("judge", c.NodeID, "the judge never ran")
	}

	// tether resume: a new execution seeded with that checkpoint, on a
	// worker whose root is empty.
	s.store.disarm()
	s.writer().wipe()
	env := loadTolerant(s.NewTestWorkflowEnvironment())
	env.RegisterWorkflowWithOptions(GraphRun, workflow.RegisterOptions{Name: runapi.WorkflowType})
	env.RegisterActivity(s.acts)
	env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Checkpoint: &cp})
	s.Require().NoError(env.GetWorkflowError())
	calls := s.writerCalls()
	s.Require().GreaterOrEqual(len(calls), 2)
	s.Equal("claude_code-s1", calls[1].SessionID, "resume is visit N of that conversation")
	s.Equal("turn 3 of claude_code-s1: draft 1 | draft 2 | draft 3", s.latest().Outputs["writer"]["text"], "the resumed visits continued the conversation of the fail-stopped one")
}

// Pack/Put fail: the slot is invalidated (never the old one restored) and
// the next visit runs fresh.
func (s *GraphRunSuite) TestPackFailureInvalidatesSlot() {
	s.agents["scripted"].onExecute = func(r agent.Request) {
		if r.Visit == 1 {
			s.writer().packErr = context.DeadlineExceeded
		} else {
			s.writer().packErr = nil
		}
	}
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	calls := s.writerCalls()
	s.Require().Len(calls, 3)
	s.Equal("claude_code-s1", calls[1].SessionID)
	s.Empty(calls[2].SessionID, "visit 2's pack failed, so visit 3 starts fresh")
}

var inheritGraph = graphYAML("inherit")

func (s *GraphRunSuite) TestInheritUsesHasSessionWithSourceFingerprint() {
	_, err := s.run(inheritGraph, nil)
	s.Require().NoError(err)
	calls := s.writer().requests()
	s.Require().Len(calls, 2)
	s.Equal("claude_code-s1", calls[1].SessionID)
	s.Equal("fp-claude_code/m-a", calls[1].Input[agent.SessionFingerprintKey], "fingerprint from the source's output, not the edge nor the node's own")
}

// HasSession false + no slot ⇒ no SessionID even though an id came in.
func (s *GraphRunSuite) TestInheritWithWipedRootRunsFresh() {
	s.writer().wipeAfter = "a"
	_, err := s.run(inheritGraph, nil)
	s.Require().NoError(err)
	calls := s.writer().requests()
	s.Require().Len(calls, 2)
	s.Empty(calls[1].SessionID)
	s.NotContains(calls[1].Input, agent.SessionIDKey)
	s.NotContains(calls[1].Input, agent.SessionFingerprintKey)
}

// A literal _session_id in with is never provenance, even when that
// session is live on the worker.
func (s *GraphRunSuite) TestLiteralSessionIDIsNotProvenance() {
	// Make "claude_code-s99" physically present in the live root.
	root := filepath.Join(s.acts.StateDir, "runs", "run-1", "claude_code") // the run's live root
	s.writer().disks[root] = map[string][]string{"claude_code-s99": {"someone else's"}}
	_, err := s.run(strings.Replace(inheritGraph, "_session_id: output._session_id", "_session_id: \"'claude_code-s99'\"", 1), nil)
	s.Require().NoError(err)
	calls := s.writer().requests()
	s.Require().Len(calls, 2)
	s.Empty(calls[1].SessionID)
}

// kimi/grok persist: capability false, so no slot and no resume.
func (s *GraphRunSuite) TestPersistOnKimiRunsFresh() {
	_, err := s.run(strings.Replace(persistLoop, "backend: claude_code", "backend: kimi", 1), nil)
	s.Require().NoError(err)
	for _, c := range s.agents["kimi"].requests() {
		s.Empty(c.SessionID)
	}
	s.Empty(s.latest().NodeSessions)
}

// Rewind + same executor + stale live state + resume from a checkpoint:
// the restored slot, not the stale files, is what the visit continues.
func (s *GraphRunSuite) TestRewindRestoresSlotOverStaleLiveState() {
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	// Checkpoint after the writer's first visit.
	target, newest := s.firstCheckpoint(afterFirstWriterVisit)
	s.Require().NotNil(target)
	// The live root still holds the 3-turn conversation, stale for the
	// rewound run; the target's slot names the 1-turn state, whose blob
	// the run retained for rewinds.
	_, err = s.store.Stat(context.Background(), target.NodeSessions["writer"].StateRef)
	s.Require().NoError(err, "the rewind target's slot blob is retained")
	root := filepath.Join(s.acts.StateDir, "runs", "run-1", "claude_code") // the run's live root
	s.Len(s.writer().disks[root]["claude_code-s1"], 3, "the live root holds the later, stale conversation")
	env := loadTolerant(s.NewTestWorkflowEnvironment())
	env.RegisterWorkflowWithOptions(GraphRun, workflow.RegisterOptions{Name: runapi.WorkflowType})
	env.RegisterActivity(s.acts)
	cp := *target
	cp.Seq = newest
	env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Checkpoint: &cp})
	s.Require().NoError(env.GetWorkflowError())
	// The writer's next visit is visit 2 of the 1-turn conversation: the
	// slot's blob was unpacked over the stale live files.
	var visit2 string
	for _, snap := range s.latest().LoopSnapshots {
		if snap.Node == "writer" && snap.Visit == 2 {
			visit2, _ = snap.Output["text"].(string)
		}
	}
	s.Equal("turn 2 of claude_code-s1: draft 1 | draft 2", visit2)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// An answer the run accepted survives a fail-stop of the checkpoint that
// would record it: the resumed run takes it instead of asking again.
func (s *GraphRunSuite) TestAcceptedAnswerSurvivesAFailStop() {
	g := graphYAML("gate")
	// The waiting checkpoint lands; the one after the answer fails.
	s.store.arm("/checkpoints/", 1, false)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "gate-1", Text: "yes, ship"})
	}, time.Minute)
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(g)})
	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(s.env.GetWorkflowError(), &appErr)
	s.Require().Equal(runapi.ErrTypeResumable, appErr.Type())
	var cp runstore.Checkpoint
	s.Require().NoError(appErr.Details(&cp))
	s.Require().NotNil(cp.Pause)
	s.True(cp.Pause.Questions[0].Answered)

	s.store.disarm()
	env := loadTolerant(s.NewTestWorkflowEnvironment())
	env.RegisterWorkflowWithOptions(GraphRun, workflow.RegisterOptions{Name: runapi.WorkflowType})
	env.RegisterActivity(s.acts)
	// No answer is ever sent to the resumed run.
	env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Checkpoint: &cp})
	s.Require().True(env.IsWorkflowCompleted())
	s.Require().NoError(env.GetWorkflowError())
	var res runapi.GraphRunResult
	s.Require().NoError(env.GetWorkflowResult(&res))
	s.Equal("yes, ship", res.Output["answer"])
	s.Equal("gate-1", res.Output["question_id"])
}

// Row 14: a persist source feeding an inherit node. The source's slot is
// the provenance: after the root is wiped the inheriting visit unpacks the
// source's blob (UnpackSourceSlot), resumes that session, and takes the
// slot's fingerprint, not its own.
func (s *GraphRunSuite) TestInheritFromAPersistSourceUnpacksItsSlot() {
	s.writer().wipeAfterPack = true
	g := strings.Replace(inheritGraph, "backend: claude_code, model: m-a, prompt: first", "backend: claude_code, model: m-a, session: persist, prompt: first", 1)
	_, err := s.run(g, nil)
	s.Require().NoError(err)
	calls := s.writer().requests()
	s.Require().Len(calls, 2)
	s.Equal("claude_code-s1", calls[1].SessionID, "the wiped session came back from a's slot")
	s.Equal("fp-claude_code/m-a", calls[1].Input[agent.SessionFingerprintKey], "the slot's fingerprint")
	s.Contains(s.latest().Outputs["b"]["text"], "turn 2 of claude_code-s1: first | second")
}

// A persist node whose settings changed since its conversation began (here
// the worker's default model) does not continue that conversation: it
// starts a fresh one and says why in its output.
func (s *GraphRunSuite) TestChangedSettingsStartAFreshConversation() {
	s.agents["scripted"].onExecute = func(agent.Request) { s.writer().defaultModel = "model-2" }
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	calls := s.writerCalls()
	s.Require().Len(calls, 3)
	s.Empty(calls[1].SessionID, "visit 2 runs under other settings than visit 1's conversation")
	s.Equal("claude_code-s2", calls[2].SessionID, "visit 3 continues visit 2's conversation, whose settings are today's")
	var snap map[string]any
	for _, ls := range s.latest().LoopSnapshots {
		if ls.Node == "writer" && ls.Visit == 2 {
			snap = ls.Output
		}
	}
	s.Require().NotNil(snap)
	s.Contains(snap[activities.SessionNoteKey], "settings changed")
}

// A run stops resumably once its spending crosses a budget, after the
// checkpoint of the visit that crossed it; resumed with a raised budget,
// it goes on from the next node, and the sums carry on.
func (s *GraphRunSuite) TestBudgetStopThenResume() {
	g := s.parse(strings.Replace(persistLoop, "start: writer\n", "start: writer\nbudget: {max_tokens: 250}\n", 1))
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: g})
	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(s.env.GetWorkflowError(), &appErr)
	s.Equal(runapi.ErrTypeBudget, appErr.Type())
	s.Contains(appErr.Error(), "the run's budget is spent: 300 tokens used, max_tokens is 250")
	var cp runstore.Checkpoint
	s.Require().NoError(appErr.Details(&cp))
	s.Equal(runstore.StatusFailedResumable, cp.Status)
	s.Equal(int64(200), cp.Usage["writer"].Tokens(), "two writer visits")
	s.Equal(int64(100), cp.Usage["judge"].Tokens())
	s.InDelta(0.03, runUsage(&cp).CostUSD, 1e-9)
	s.Require().Len(cp.Cursor, 1)
	s.Equal("judge", cp.Cursor[0].Node, "the stop came after the writer's second visit was committed")
	stored := s.latest()
	s.Equal(runstore.StatusFailedResumable, stored.Status, "the run store records the stop")

	// Resume with a raised budget.
	editGraph(&cp, func(g *graph.Graph) { g.Budget = &graph.Budget{MaxTokens: 10_000} })
	env := loadTolerant(s.NewTestWorkflowEnvironment())
	env.RegisterWorkflowWithOptions(GraphRun, workflow.RegisterOptions{Name: runapi.WorkflowType})
	env.RegisterActivity(s.acts)
	env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Checkpoint: &cp})
	s.Require().NoError(env.GetWorkflowError())
	var res runapi.GraphRunResult
	s.Require().NoError(env.GetWorkflowResult(&res))
	s.Equal(int64(600), res.Usage.Tokens(), "three writer and three judge visits in all")
	s.Equal(3, len(s.writerCalls()))
}

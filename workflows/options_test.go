package workflows

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// started records each activity's info as the test environment starts it.
func (s *GraphRunSuite) started() func() map[string][]*activity.Info {
	var mu sync.Mutex
	seen := map[string][]*activity.Info{}
	s.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		i := *info
		seen[info.ActivityType.Name] = append(seen[info.ActivityType.Name], &i)
	})
	return func() map[string][]*activity.Info {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// A visit may take its node's own timeout, else the run's node timeout
// (an agent) or ten minutes (a tool), plus room to restore and snapshot;
// its worker is lost after the run's heartbeat timeout.
func (s *GraphRunSuite) TestVisitTimeouts() {
	infos := s.started()
	g := s.parse(graphYAML("timeouts"))
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: g, Options: runapi.Options{NodeTimeout: 7 * time.Minute, HeartbeatTimeout: 11 * time.Second}})
	s.Require().NoError(s.env.GetWorkflowError())
	visits := infos()["Visit"]
	s.Require().Len(visits, 3)
	s.Equal(3*time.Minute+visitOverhead, visits[0].StartToCloseTimeout, "the node's own timeout")
	s.Equal(7*time.Minute+visitOverhead, visits[1].StartToCloseTimeout, "the run's node timeout")
	s.Equal(defaultToolTimeout+visitOverhead, visits[2].StartToCloseTimeout, "a tool's default")
	for _, v := range visits {
		s.Equal(11*time.Second, v.HeartbeatTimeout)
	}
}

// A run resumed from the checkpoint of an agent's ask_user waits for that
// question's answer and resumes the conversation from the pause ref; it
// does not run the agent again, which would ask again.
func (s *GraphRunSuite) TestResumedAskWaitsForItsAnswer() {
	var waiting *runstore.Checkpoint
	s.env.RegisterDelayedCallback(func() {
		waiting = s.latest()
		s.env.CancelWorkflow() // the worker went away while the run waited
	}, time.Hour)
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(askGraph)})
	s.Require().Error(s.env.GetWorkflowError())
	s.Require().NotNil(waiting)
	s.Require().NotNil(waiting.Pause)
	s.Require().NotEmpty(waiting.Pause.Backend)
	before := len(s.writerCalls())

	s.writer().wipe()
	env := loadTolerant(s.NewTestWorkflowEnvironment())
	env.RegisterWorkflowWithOptions(GraphRun, workflow.RegisterOptions{Name: runapi.WorkflowType})
	env.RegisterActivity(s.acts)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "writer-1-q1", Text: "resumed"})
	}, time.Hour)
	cp := *waiting
	cp.Seq = s.latest().Seq // the cancel recorded a last checkpoint after it
	env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Checkpoint: &cp})
	s.Require().NoError(env.GetWorkflowError())
	calls := s.writerCalls()[before:]
	s.Require().Len(calls, 1, "one visit: the answer, not the question again")
	s.Require().NotNil(calls[0].Answer)
	s.Equal("resumed", calls[0].Answer.Text)
	s.Equal(waiting.Pause.SessionID, calls[0].SessionID, "from the pause ref, on an empty root")
}

// visitRequests records the Visit requests the run schedules.
func (s *GraphRunSuite) visitRequests() func() []activities.VisitRequest {
	var mu sync.Mutex
	var reqs []activities.VisitRequest
	s.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name != "Visit" {
			return
		}
		var req activities.VisitRequest
		s.Require().NoError(args.Get(&req))
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, req)
	})
	return func() []activities.VisitRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]activities.VisitRequest(nil), reqs...)
	}
}

// A persist node's visits pack incrementally (incremental-session-packs),
// other nodes' never; runs recorded before packed every visit whole.
func (s *GraphRunSuite) TestOnlyPersistVisitsPackIncrementally() {
	for _, before := range []bool{false, true} {
		s.SetupTest()
		if before {
			s.recordedBefore(changeIncrementalPacks, versionIncrementalPacks)
		}
		reqs := s.visitRequests()
		_, err := s.run(persistLoop, nil)
		s.Require().NoError(err)
		s.Require().Len(reqs(), 6)
		for _, req := range reqs() {
			s.Equal(!before && req.NodeID == "writer", req.Incremental, "%s visit %d, before=%v", req.NodeID, req.Visit, before)
		}
	}
}

// What a run sends each visit: an agent a pause key, a persist agent
// also a pack key, a tool neither; a slot's recorded digest as it is; the
// branches of the latest join only to a node whose prompt uses them; and
// a visit in a named branch as VisitBranch.
func (s *GraphRunSuite) TestVisitRequestsCarryWhatTheirNodeNeeds() {
	reqs := s.visitRequests()
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	var slotDigests []string
	for _, req := range reqs() {
		s.NotEmpty(req.PauseTo, "%s: an agent may ask", req.NodeID)
		s.Equal(req.NodeID == "writer", req.PackTo != "", "%s: only persist packs", req.NodeID)
		if req.Session != nil && req.Session.Kind == "unpack_own_slot" {
			slotDigests = append(slotDigests, req.Session.Digest)
		}
	}
	s.Require().Len(slotDigests, 2)
	for _, d := range slotDigests {
		s.Regexp(`^sha256:[0-9a-f]{64}$`, d, "a slot without parts is planned with its digest as recorded")
	}

	s.SetupTest()
	reqs = s.visitRequests()
	infos := s.started()
	g := strings.Replace(filesGraph, "  - {id: last, kind: tool, run: [sh, -c, 'cat base.txt']}",
		"  - {id: last, kind: tool, run: [sh, -c, 'cat base.txt; echo \"{{.workspace.branches}}\" | grep -c \"## branch\"']}", 1)
	s.Require().NotEqual(filesGraph, g)
	_, err = s.run(g, nil)
	s.Require().NoError(err)
	for _, req := range reqs() {
		s.Empty(req.PauseTo, req.NodeID)
		s.Empty(req.PackTo, req.NodeID)
		s.Equal(req.NodeID == "last", len(req.Joined) == 2, "%s: the joined branches go only where the prompt uses them", req.NodeID)
	}
	s.Equal("base\nmore\n2\n", s.latest().Outputs["last"]["stdout"])
	var branchVisits []string
	for _, i := range infos()["VisitBranch"] {
		branchVisits = append(branchVisits, i.ActivityType.Name)
	}
	s.Len(branchVisits, 4, "l1, l2, r1, r2 run as VisitBranch")
	s.Len(infos()["Visit"], 3, "seed, after and last as Visit")
}

// A node whose backend is not on the worker runs on its fallback, and its
// next visit plans for the backend it actually ran on, so it continues
// that conversation.
func (s *GraphRunSuite) TestTheNextVisitPlansForTheFallbackThatRan() {
	g := strings.Replace(persistLoop, "{id: writer, kind: agent, backend: claude_code,", "{id: writer, kind: agent, backend: codex, fallback: [claude_code],", 1)
	s.Require().NotEqual(persistLoop, g)
	_, err := s.run(g, nil)
	s.Require().NoError(err)
	calls := s.writerCalls()
	s.Require().Len(calls, 3, "codex is not on this worker: the writer ran on claude_code")
	s.Empty(calls[0].SessionID)
	s.Equal("claude_code-s1", calls[1].SessionID, "planned for claude_code, the backend it ran on")
	s.Equal("claude_code-s1", calls[2].SessionID)
	s.Equal("claude_code", s.latest().NodeSessions["writer"].Backend)
}

// An edge without `with` passes the source output's own keys, never its
// reserved ones; the run records each distinct edge taken once.
func (s *GraphRunSuite) TestAnEdgeWithoutWithPassesTheOutputsOwnKeys() {
	_, err := s.run(runInputGraph, map[string]any{"topic": "otters"})
	s.Require().NoError(err)
	calls := s.writer().requests()
	s.Require().Len(calls, 2)
	s.Equal("turn 1 of claude_code-s1: first", calls[1].Input["text"])
	s.Equal("otters", calls[1].Input["topic"], "the run's inputs")
	for _, k := range []string{agent.SessionIDKey, agent.BackendKey, agent.SessionFingerprintKey, agent.UsageKey} {
		s.NotContains(calls[1].Input, k)
	}

	s.SetupTest()
	_, err = s.run(persistLoop, nil)
	s.Require().NoError(err)
	s.Equal([]runstore.Transition{{From: "writer", To: "judge"}, {From: "judge", To: "writer"}, {From: "judge", To: "done"}}, s.latest().Transitions)
}

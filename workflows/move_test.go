package workflows

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// routingOf is a worker's view of its deployment that a test changes as
// it goes: what workerhost's router would read from Temporal.
type routingOf struct {
	mu sync.Mutex
	rt Routing
	// reads counts the reads; after is, when set, called with each.
	reads int
	after func(n int, rt *Routing)
}

func (r *routingOf) get() Routing {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.after != nil {
		r.after(r.reads, &r.rt)
	}
	return r.rt
}

func (r *routingOf) set(rt Routing) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rt = rt
}

// versioned makes env's worker a versioned one whose routing is rt.
func versioned(env *testsuite.TestWorkflowEnvironment, rt *routingOf) {
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute, Interceptors: []interceptor.WorkerInterceptor{RoutingInterceptor(rt.get)}})
}

// pins records the versioning overrides PinExecution sets.
type pins struct {
	mu   sync.Mutex
	reqs []client.UpdateWorkflowExecutionOptionsRequest
}

func (p *pins) UpdateWorkflowExecutionOptions(_ context.Context, req client.UpdateWorkflowExecutionOptionsRequest) (client.WorkflowExecutionOptions, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, req)
	return client.WorkflowExecutionOptions{}, nil
}

func (p *pins) builds() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, r := range p.reqs {
		o, _ := r.WorkflowExecutionOptionsChanges.VersioningOverride.Value.(*client.PinnedVersioningOverride)
		if o == nil {
			out = append(out, "")
			continue
		}
		out = append(out, o.Version.DeploymentName+":"+o.Version.BuildID)
	}
	return out
}

// continuedWith is the input of the execution env's workflow continued
// as new into.
func (s *GraphRunSuite) continuedWith(env *testsuite.TestWorkflowEnvironment) *runapi.GraphRunInput {
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(err, &can), "the run did not continue as new: %v", err)
	var next runapi.GraphRunInput
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	return &next
}

var (
	onA = Routing{Deployment: "tether", Build: "a", Current: "a"}
	onB = Routing{Deployment: "tether", Build: "a", Current: "b", Changed: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
)

// Between two visits, a run whose deployment made another build current
// continues as new, its checkpoint carried as a long loop's is, and the
// new input says why; it never leaves in the middle of a visit.
func (s *GraphRunSuite) TestARunMovesToTheCurrentBuildBetweenVisits() {
	rt := &routingOf{rt: onA}
	// The routing changes while the second visit runs; the run reads it
	// at the top of its loop, before each visit.
	rt.after = func(n int, r *Routing) {
		if n == 3 {
			*r = onB
		}
	}
	versioned(s.env, rt)
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(persistLoop)})
	next := s.continuedWith(s.env)
	s.Require().NotNil(next.Move)
	s.Equal(runapi.Move{Deployment: "tether", From: "a", To: "b", Since: onB.Changed,
		Reason: "deployment tether routes new runs to build b now, not to this run's build a"}, *next.Move)
	cp := next.Checkpoint
	s.Require().NotNil(cp)
	s.Equal("writer", cp.Cursor[0].Node, "it left after the judge's visit, before the writer's next")
	s.Equal(1, cp.Visits["writer"])
	s.Equal(1, cp.Visits["judge"])
	s.Equal("writer>judge", pathString(cp.Path))
	s.Require().Contains(cp.NodeSessions, "writer", "the writer's conversation goes with it")
	s.Len(s.writerCalls(), 1)
	s.Equal(cp.Seq, s.latest().Seq, "what it carries is its last checkpoint")
}

// A run on the ramping build stays (the ramp is its trial), as does a run
// on the current build, or on an unversioned worker.
func (s *GraphRunSuite) TestARunStaysOnACurrentOrRampingBuild() {
	for _, rt := range []Routing{onA, {Deployment: "tether", Build: "b", Current: "a", Ramping: "b"}, {}} {
		s.SetupTest()
		versioned(s.env, &routingOf{rt: rt})
		_, err := s.run(persistLoop, nil)
		s.Require().NoError(err, "%+v", rt)
	}
}

// A run waiting for a person moves when the upgrade signal asks it to
// check and its build is no longer routed to; the pause goes with it, and
// no failed step is recorded for the wait it left. Asked while its build
// is still current, it waits on.
func (s *GraphRunSuite) TestAWaitingRunMovesWhenAsked() {
	rt := &routingOf{rt: onA}
	versioned(s.env, rt)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(runapi.SignalUpgrade, nil) // nothing changed: it waits on
	}, time.Hour)
	s.env.RegisterDelayedCallback(func() {
		s.Require().Len(s.queryState().Questions, 1, "still waiting")
		rt.set(onB)
		s.env.SignalWorkflow(runapi.SignalUpgrade, nil)
	}, 2*time.Hour)
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(humanGraph), Inputs: map[string]any{"title": "Otters"}})
	next := s.continuedWith(s.env)
	s.Require().NotNil(next.Move)
	s.Equal("b", next.Move.To)
	cp := next.Checkpoint
	s.Require().NotNil(cp.Pause)
	s.Equal("ask", cp.Pause.NodeID)
	s.Equal("ask-1", cp.Pause.Questions[0].ID)
	s.Equal(runstore.StatusWaiting, cp.Status)
	s.Empty(cp.Path, "no step for the wait it left")
}

// The execution a move started pins itself to the target build before
// anything else and takes an answer sent while it moves; the question
// keeps its id, and the run ends as if it had never moved.
func (s *GraphRunSuite) TestAMovedRunPinsItselfThenTakesItsAnswer() {
	rt := &routingOf{rt: onA}
	versioned(s.env, rt)
	s.env.RegisterDelayedCallback(func() {
		rt.set(onB)
		s.env.SignalWorkflow(runapi.SignalUpgrade, nil)
	}, time.Hour)
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(humanGraph), Inputs: map[string]any{"title": "Otters"}})
	next := s.continuedWith(s.env)
	s.Require().NotNil(next.Checkpoint.Pause, "it moved while it waited")

	s.SetupTest()
	p := &pins{}
	s.acts.Pins = p
	// The new execution's first task runs on the old build; once pinned,
	// the next runs on the new one.
	arrived := &routingOf{rt: onB, after: func(n int, r *Routing) {
		if n > 1 {
			r.Build = "b"
		}
	}}
	versioned(s.env, arrived)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "yes"})
	}, 100*time.Millisecond)
	s.env.ExecuteWorkflow(GraphRun, next)
	s.Require().NoError(s.env.GetWorkflowError(), "%v", s.logs.at("DEBUG"))
	var res runapi.GraphRunResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal("yes", res.Output["answer"])
	s.Equal("ask>done", pathOf(&res))
	s.Equal([]string{"tether:b"}, p.builds(), "pinned once, to the new build")
}

// A moved execution never moves back on a worker that has not read the
// routing it moved on yet.
func (s *GraphRunSuite) TestAMovedRunDoesNotMoveBackOnAStaleRouting() {
	stale := Routing{Deployment: "tether", Build: "b", Current: "a", Changed: onB.Changed.Add(-time.Hour)}
	versioned(s.env, &routingOf{rt: stale})
	mv := &runapi.Move{Deployment: "tether", From: "a", To: "b", Since: onB.Changed}
	// Already on b: no pin, no wait.
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(persistLoop), Move: mv})
	s.Require().NoError(s.env.GetWorkflowError())
}

// A run that `tether upgrade-runs --replay` pinned to the current build
// b and signalled, whose worker of b has not read the switch yet (it
// still reads a as current), does not move back to a on that view: it
// waits on, takes its answer on b, and ends there, without moving.
func (s *GraphRunSuite) TestAReplayedRunDoesNotMoveBackOnItsWorkersStaleRouting() {
	s.askedToMoveThenAnswered(Routing{Deployment: "tether", Build: "b", Current: "a", Changed: onB.Changed.Add(-time.Hour)}, "still waiting")
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(humanGraph), Inputs: map[string]any{"title": "Otters"}})
	s.Require().NoError(s.env.GetWorkflowError(), "it did not move")
	var res runapi.GraphRunResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal("yes", res.Output["answer"])
	s.Equal("ask>done", pathOf(&res))
}

func pathString(path []runstore.Step) string {
	var p []string
	for _, st := range path {
		p = append(p, st.Node)
	}
	out := ""
	for i, n := range p {
		if i > 0 {
			out += ">"
		}
		out += n
	}
	return out
}

// A waiting run asked to move by someone who read a newer routing than
// its worker has looks again until its worker has read it, then moves;
// asked by someone who read nothing newer, it waits on at once.
func (s *GraphRunSuite) TestAWaitingRunWaitsForItsWorkerToReadTheNewRouting() {
	rt := &routingOf{rt: onA}
	versioned(s.env, rt)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(runapi.SignalUpgrade, runapi.Upgrade{Current: "b", Since: onB.Changed})
	}, time.Hour)
	s.env.RegisterDelayedCallback(func() { rt.set(onB) }, time.Hour+5*time.Second)
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(humanGraph), Inputs: map[string]any{"title": "Otters"}})
	next := s.continuedWith(s.env)
	s.Require().NotNil(next.Move)
	s.Equal("b", next.Move.To)
}

// A question asked inside a fan-out's branch lives in the run's memory
// only, so the run does not leave that wait: asked to move while a branch
// waits, it waits on, takes the answer, and moves once every branch is
// done, before the join.
func (s *GraphRunSuite) TestARunWaitingInABranchMovesOnceTheBranchesAreDone() {
	g := graphYAML("branch-ask")
	s.askedToMoveThenAnswered(onB, "still waiting in the branch")
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Graph: s.parse(g)})
	next := s.continuedWith(s.env)
	s.Require().NotNil(next.Move)
	s.Equal([]string{"meet"}, cursorNodes(next.Checkpoint), "it moved with every branch done, before the join")
	s.Equal("yes", next.Checkpoint.Outputs["gate"]["answer"])
}

// askedToMoveThenAnswered runs the suite's workflow on a worker whose
// routing is onA until, an hour in, it reads later and the run is asked
// to move (by a command that read onB's switch); an hour after that, the
// run, waiting (why) on its one question, is answered "yes".
func (s *GraphRunSuite) askedToMoveThenAnswered(later Routing, why string) {
	rt := &routingOf{rt: onA}
	versioned(s.env, rt)
	s.env.RegisterDelayedCallback(func() {
		rt.set(later)
		s.env.SignalWorkflow(runapi.SignalUpgrade, runapi.Upgrade{Current: "b", Since: onB.Changed})
	}, time.Hour)
	s.env.RegisterDelayedCallback(func() {
		st := s.queryState()
		s.Require().Len(st.Questions, 1, why)
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: st.Questions[0].ID, Text: "yes"})
	}, 2*time.Hour)
}

func cursorNodes(cp *runstore.Checkpoint) []string {
	var out []string
	for _, c := range cp.Cursor {
		out = append(out, c.Node)
	}
	return out
}

package workflows

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// GraphRun interprets one graph run. Its whole state is a
// runstore.Checkpoint: saved to the run store after every visit, carried
// across continue-as-new, and handed back by a fail-stop.
func GraphRun(ctx workflow.Context, in *runapi.GraphRunInput) (*runapi.GraphRunResult, error) {
	r, err := newRun(ctx, in)
	if err != nil {
		return nil, err
	}
	r.onBaseline(ctx)
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	r.arrive(ctx)
	if err := r.claimRunID(ctx); err != nil {
		return nil, err
	}
	res, err := r.execute(ctx)
	r.noticeEnd(ctx, res, err)
	r.endGitHub(ctx, err)
	return res, err
}

// execute runs the graph from where the input says.
func (r *runImpl) execute(ctx workflow.Context) (*runapi.GraphRunResult, error) {
	in := r.in
	r.askAgainIfRewound(ctx)
	if r.viaVisit = r.oneTripVisits(ctx); r.viaVisit {
		if in.Checkpoint == nil {
			// A new run has a workspace from its first visit: the one
			// `tether run` imported, or an empty one.
			r.cp.Workspace = &runstore.WorkspaceState{}
			if in.Workspace != nil {
				r.cp.Workspace = in.Workspace
			}
		}
		r.startVisibility(ctx)
		if err := r.importWorkspace(ctx); err != nil {
			return nil, r.fail(ctx, err)
		}
	}
	if err := r.stopIfOverBudget(ctx, changeBudgetAtStart, versionBudgetAtStart); err != nil {
		return nil, err
	}
	res, err := r.run(ctx)
	return res, r.endCanceled(ctx, err)
}

// importWorkspace starts a new run's workspace from the source its graph
// names, when the run was started without one (`tether run` imports it
// itself; a run started with the temporal CLI does not).
func (r *runImpl) importWorkspace(ctx workflow.Context) error {
	src := r.g.Workspace
	if r.in.Checkpoint != nil || r.in.Workspace != nil || src == nil || src.From == "" {
		return nil
	}
	if !r.at(ctx, changeWorkspaceImport, versionWorkspaceImport) {
		return nil
	}
	from, ref, err := src.Render(r.cp.Inputs)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("graph %q: %v", r.g.Name, err), runapi.ErrTypeGraph, err)
	}
	if from == "" {
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             "import the workspace from " + oneLine(from, 80),
		TaskQueue:           runapi.TaskQueue,
		StartToCloseTimeout: importTimeout,
		HeartbeatTimeout:    r.opts.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{activities.ErrTypeWorkspace, activities.ErrTypeBadRequest},
		},
	})
	var st runstore.WorkspaceState
	req := &activities.ImportRequest{RunID: r.cp.RunID, From: from, Ref: ref, Started: workflow.Now(ctx)}
	if err := workflow.ExecuteActivity(actx, acts.ImportWorkspace, req).Get(ctx, &st); err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("graph %q: the workspace could not be imported from %s: %s", r.g.Name, from, activities.ErrorText(err)), runapi.ErrTypeWorkspace, err)
	}
	r.cp.Workspace = &st
	return nil
}

// runImpl is one execution of GraphRun.
type runImpl struct {
	in   *runapi.GraphRunInput
	opts runapi.Options
	cp   *runstore.Checkpoint
	g    *graph.Graph

	// questions are the questions waiting for an answer, in the order asked.
	questions []*question
	// current are the nodes being visited right now.
	current []string
	// refSeq makes every minted blob ref of this execution unique.
	refSeq int
	// saveMu makes the saves of concurrent fan-out branches run one at a
	// time (each takes the next sequence number).
	saveMu workflow.Mutex
	// lastQueue is the worker queue of the last trunk agent visit: where
	// that agent's working directory is. Not carried across
	// continue-as-new; a new execution starts without affinity.
	lastQueue string
	// viaVisit is set in executions that visit through the Visit activity
	// (changeOneTripVisit); only they name their activities and keep
	// search attributes.
	viaVisit bool
	// baseline is set in executions that take the baseline's changes
	// without asking for each (changeBaseline).
	baseline bool
	vis      visibility
	// retryNotes are the latest visits that ran again after an
	// interrupted attempt (retrynote.go), for the run's details.
	retryNotes []retryNote
	// notices are the notices this execution sent (notice.go).
	notices notices
	// canceled are the visits a cancel stopped (cancel.go).
	canceled []runstore.EndedVisit
	// rewound says this execution starts from the checkpoint a rewind
	// wrote: the questions its pause waits for are asked again
	// (changeRewoundQuestions).
	rewound bool
	// gh keeps the run's GitHub thread current (github.go).
	gh gitHubReporter
	// upgradeAsked is set by the upgrade signal: a waiting run checks
	// whether it should move to another build (move.go); upgradeSince is
	// the newest routing a sender said it read.
	upgradeAsked bool
	upgradeSince time.Time
}

// question is a pending question and, once answered, its answer.
type question struct {
	ID         string
	Node       string
	Text       string
	Answered   bool
	Answer     string
	AllowEmpty bool
	// Notice names the notice sent for this asking of the question
	// (runstore.Question.Notice), which its answer links name.
	Notice string
}

func newRun(ctx workflow.Context, in *runapi.GraphRunInput) (*runImpl, error) {
	if in == nil || in.RunID == "" {
		return nil, temporal.NewNonRetryableApplicationError("GraphRun needs a run_id", runapi.ErrTypeGraph, nil)
	}
	r := &runImpl{in: in, opts: withDefaults(in.Options)}
	if in.Checkpoint != nil {
		cp := *in.Checkpoint
		r.cp = &cp
		r.cp.RunID = in.RunID
		g, err := runapi.GraphOf(&cp)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s: the checkpoint it continues from holds a graph that does not read (%v); resume it from another checkpoint, or start the graph anew", in.RunID, err), runapi.ErrTypeGraph, nil)
		}
		r.g = g
		l := cp.Lineage
		r.rewound = l != nil && l.Kind == "rewind" && l.At != 0 && l.At == cp.Seq
	} else {
		if in.Graph == nil {
			return nil, temporal.NewNonRetryableApplicationError("GraphRun needs a graph or a checkpoint", runapi.ErrTypeGraph, nil)
		}
		inputs, err := applyInputDefaults(in.Graph, in.Inputs)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), runapi.ErrTypeGraph, nil)
		}
		r.g = in.Graph
		r.cp = &runstore.Checkpoint{
			Version: runstore.FormatVersion,
			RunID:   in.RunID,
			Inputs:  inputs,
			Cursor:  []runstore.Cursor{{Node: in.Graph.Start, Input: maps.Clone(inputs)}},
			GitHub:  in.GitHub,
		}
		if err := runapi.SetGraph(r.cp, in.Graph); err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), runapi.ErrTypeGraph, nil)
		}
	}
	r.cp.Status = runstore.StatusRunning
	r.cp.Error = ""
	if r.cp.Outputs == nil {
		r.cp.Outputs = map[string]map[string]any{}
	}
	if r.cp.Visits == nil {
		r.cp.Visits = map[string]int{}
	}
	if r.cp.NodeSessions == nil {
		r.cp.NodeSessions = map[string]runstore.NodeSessionSlot{}
	}
	if _, ok := r.g.Node(r.g.Start); !ok {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("graph %q: start node %q does not exist; run `tether validate` on the graph file", r.g.Name, r.g.Start), runapi.ErrTypeGraph, nil)
	}
	// A run checkpointed while a node waited for an answer visits that node
	// again under the same visit number, so its questions keep their ids.
	if p := r.cp.Pause; p != nil && p.Visit > 0 {
		r.cp.Visits[p.NodeID] = p.Visit - 1
	}
	// So does one a spent budget stopped mid-turn: the visit goes on.
	if s := r.cp.Stopped; s != nil && s.Visit > 0 {
		r.cp.Visits[s.Node] = s.Visit - 1
	}
	return r, nil
}

func applyInputDefaults(g *graph.Graph, given map[string]any) (map[string]any, error) {
	out := g.WithDefaults(given)
	var missing []string
	for _, in := range g.Inputs {
		if _, ok := out[in.Name]; !ok && in.Required {
			missing = append(missing, in.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("graph %q: missing required input(s) %s; pass them with --input NAME=VALUE", g.Name, strings.Join(missing, ", "))
	}
	return out, nil
}

// setup registers the query, the answer signal and the answer update.
func (r *runImpl) setup(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, runapi.QueryState, func() (*runapi.State, error) {
		return r.state(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, runapi.UpdateAnswer,
		func(ctx workflow.Context, a runapi.Answer) (string, error) {
			if ok, err := r.reviewNodeAnswer(a, true); ok {
				return "accepted", err
			}
			if err := r.applyAnswer(a); err != nil {
				return "", err
			}
			return "accepted", nil
		},
		workflow.UpdateHandlerOptions{Validator: func(a runapi.Answer) error {
			if ok, err := r.reviewNodeAnswer(a, false); ok {
				return err
			}
			q, err := r.findQuestion(a)
			if err == nil {
				err = r.validReviewAnswer(q, a)
			}
			if err == nil && strings.TrimSpace(a.Text) == "" && !q.AllowEmpty {
				// Only the update refuses it: a validator's refusal leaves
				// no trace in history, where a signal's answer is recorded.
				return fmt.Errorf("%w: %q needs a non-empty answer (its node does not set allow_empty)", ErrEmptyAnswer, q.ID)
			}
			return err
		}},
	); err != nil {
		return err
	}
	r.receiveGuidance(ctx)
	r.receiveUpgrade(ctx)
	receiveEach(ctx, runapi.SignalAnswer, func(ctx workflow.Context, a runapi.Answer) {
		if ok, err := r.reviewNodeAnswer(a, true); ok {
			if err != nil {
				workflow.GetLogger(ctx).Warn("answer signal ignored", "question_id", a.QuestionID, "error", err.Error())
			}
			return
		}
		if err := r.applyAnswer(a); err != nil {
			workflow.GetLogger(ctx).Warn("answer signal ignored", "question_id", a.QuestionID, "error", err.Error())
		}
	})
	return nil
}

// receiveEach hands each signal of the name, as a T, to handle, in a
// coroutine of its own, for the rest of the execution.
func receiveEach[T any](ctx workflow.Context, name string, handle func(ctx workflow.Context, v T)) {
	ch := workflow.GetSignalChannel(ctx, name)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var v T
			ch.Receive(ctx, &v)
			handle(ctx, v)
		}
	})
}

// ErrUnknownQuestion and ErrAlreadyAnswered are what the answer update's
// validator reports.
var (
	ErrUnknownQuestion = errors.New("no pending question with this id")
	ErrAlreadyAnswered = errors.New("question already answered")
	ErrEmptyAnswer     = errors.New("empty answer")
)

func (r *runImpl) findQuestion(a runapi.Answer) (*question, error) {
	if a.QuestionID == "" {
		return nil, fmt.Errorf("answer has no question_id; `tether status %s` lists the pending questions", r.cp.RunID)
	}
	for _, q := range r.questions {
		if q.ID == a.QuestionID {
			if q.Answered {
				return nil, fmt.Errorf("%w: %q was answered with %q", ErrAlreadyAnswered, q.ID, q.Answer)
			}
			return q, nil
		}
	}
	var pending []string
	for _, q := range r.questions {
		if !q.Answered {
			pending = append(pending, q.ID)
		}
	}
	if len(pending) == 0 {
		return nil, fmt.Errorf("%w: %q (run %s is not waiting for any answer)", ErrUnknownQuestion, a.QuestionID, r.cp.RunID)
	}
	return nil, fmt.Errorf("%w: %q (pending: %s)", ErrUnknownQuestion, a.QuestionID, strings.Join(pending, ", "))
}

func (r *runImpl) applyAnswer(a runapi.Answer) error {
	q, err := r.findQuestion(a)
	if err != nil {
		return err
	}
	q.Answered = true
	q.Answer = a.Text
	return nil
}

// ask registers questions and blocks until every one is answered; it
// returns the answers in order and forgets the questions.
func (r *runImpl) ask(ctx workflow.Context, node string, qs []runstore.Question) ([]string, error) {
	mine := r.register(node, qs)
	// A branch's questions, and a pause restored without its notices.
	r.noticeQuestions(ctx, node, qs)
	r.details(ctx)
	if err := r.awaitAnswers(ctx, node, mine); err != nil {
		return nil, err
	}
	answers := make([]string, len(mine))
	r.details(ctx)
	for i, q := range mine {
		answers[i] = q.Answer
	}
	// Answered questions stay known for a while, so a late second answer
	// is told "already answered" rather than "unknown".
	if over := len(r.questions) - maxAnsweredKept; over > 0 {
		r.questions = slices.DeleteFunc(r.questions, func(q *question) bool {
			if over > 0 && q.Answered {
				over--
				return true
			}
			return false
		})
	}
	return answers, nil
}

// register makes questions known to the answer handlers (once each) and
// returns them.
func (r *runImpl) register(node string, qs []runstore.Question) []*question {
	mine := make([]*question, 0, len(qs))
	for _, q := range qs {
		existing := r.lookup(q.ID)
		if existing == nil {
			existing = &question{ID: q.ID, Node: node, Text: q.Text, AllowEmpty: q.AllowEmpty, Notice: q.Notice}
			r.questions = append(r.questions, existing)
		}
		mine = append(mine, existing)
	}
	return mine
}

// postQuestions registers questions before the run says it waits for
// them: between the waiting status (which `temporal workflow list --query
// 'TetherStatus="waiting"'` shows) and ask, the pause checkpoint runs, and
// an answer signalled then was dropped as unknown, leaving the run waiting
// for an answer it had been given (changeQuestionsFirst).
func (r *runImpl) postQuestions(ctx workflow.Context, node string, qs []runstore.Question) {
	if r.at(ctx, changeQuestionsFirst, versionQuestionsFirst) {
		r.register(node, qs)
	}
	// Before the pause checkpoint, which then records the notices sent.
	r.noticeQuestions(ctx, node, qs)
}

func (r *runImpl) lookup(id string) *question {
	for _, q := range r.questions {
		if q.ID == id {
			return q
		}
	}
	return nil
}

// state builds the query answer from the checkpoint plus what only the
// running workflow knows (the nodes being visited, the questions asked),
// with long values cut and never a state ref.
func (r *runImpl) state() *runapi.State {
	s := StateOf(r.cp)
	s.Current = slices.Clone(r.current)
	for _, id := range sortedKeys(s.Outputs) {
		s.Outputs[id] = queryValue(s.Outputs[id])
	}
	s.Questions = nil
	for _, q := range r.questions {
		if !q.Answered {
			s.Questions = append(s.Questions, runapi.PendingQuestion{ID: q.ID, Node: q.Node, Text: q.Text, AllowEmpty: q.AllowEmpty, Options: optionsOf(r.g, q.Node), Asking: q.Notice})
		}
	}
	return s
}

// queryValue copies an output for a query, cutting long strings and
// dropping any transient key.
func queryValue(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for _, k := range sortedKeys(m) {
		if k == agent.SessionStateBlobKey || k == agent.SessionStateKey {
			continue
		}
		v := m[k]
		if s, ok := v.(string); ok && len(s) > maxQueryValue {
			v = s[:maxQueryValue] + fmt.Sprintf("… (%d bytes)", len(s))
		}
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string { return workflow.DeterministicKeys(m) }

// StateOf is what a checkpoint alone says about a run (runapi.StateOf).
func StateOf(cp *runstore.Checkpoint) *runapi.State { return runapi.StateOf(cp) }

// optionsOf are the options of node, when it is a human node.
func optionsOf(g *graph.Graph, node string) []string { return runapi.OptionsOf(g, node) }

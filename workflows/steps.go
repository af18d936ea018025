package workflows

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// acts is only used for method expressions: the workflow names activities
// by method, never calls them.
var acts *activities.Activities

// save writes the next checkpoint to the run store. It runs as a local
// activity: the store is shared by every worker, and a local activity keeps
// a regular activity's round trip off every visit's critical path.
func (r *runImpl) save(ctx workflow.Context) error {
	cp := *r.cp
	cp.Seq = r.cp.Seq + 1
	summary := ""
	if r.viaVisit {
		summary = fmt.Sprintf("checkpoint %d · %s", cp.Seq, cp.Status)
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary: summary,
		// The store itself waits out an outage of up to two minutes
		// (blob.WithRetry) before a save fails; the fail-stop comes after.
		StartToCloseTimeout: checkpointTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        200 * time.Millisecond,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{activities.ErrTypeBadRequest},
		},
	})
	err := workflow.ExecuteLocalActivity(lctx, activities.SaveCheckpointName, &activities.CheckpointRequest{Checkpoint: &cp}).Get(ctx, nil)
	// The number is used up even when the save failed: the write may have
	// landed before the error, and a checkpoint is never overwritten.
	r.cp.Seq = cp.Seq
	return err
}

// deleteBlobs removes blobs that no durable checkpoint names any more. It
// is best effort: a blob left behind is garbage for `tether delete`, never
// a wrong conversation.
func (r *runImpl) deleteBlobs(ctx workflow.Context, keys []string) {
	var live []string
	for _, k := range keys {
		if k != "" {
			live = append(live, k)
		}
	}
	if len(live) == 0 {
		return
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	if err := workflow.ExecuteLocalActivity(lctx, activities.DeleteBlobsName, &activities.DeleteBlobsRequest{Keys: live}).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("could not delete superseded session blobs; `tether delete` removes them with the run", "count", len(live), "error", err.Error())
	}
}

// mintID returns a ULID that is the same on every replay: its time is the
// workflow's clock and its entropy a hash of this execution's id and a
// counter, so a retried Put of the same visit writes the same key.
func (r *runImpl) mintID(ctx workflow.Context) string {
	r.refSeq++
	info := workflow.GetInfo(ctx)
	h := sha256.New()
	h.Write([]byte(info.WorkflowExecution.RunID))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(r.refSeq))
	h.Write(n[:])
	sum := h.Sum(nil)
	var id ulid.ULID
	if err := id.SetTime(ulid.Timestamp(workflow.Now(ctx))); err != nil {
		panic(fmt.Sprintf("workflow clock out of ULID range: %v", err))
	}
	copy(id[6:], sum[:10])
	if mintHook != nil {
		mintHook(id.String())
	}
	return id.String()
}

// mintHook, set only by tests, sees every minted id.
var mintHook func(id string)

// oneTripVisits reports whether this run visits agents and tools in one
// Visit activity with a durable workspace (changeOneTripVisit).
func (r *runImpl) oneTripVisits(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, changeOneTripVisit, workflow.DefaultVersion, versionOneTripVisit) == versionOneTripVisit
}

// continueAsNewDue reports whether history is large enough to start over.
func (r *runImpl) continueAsNewDue(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= r.opts.ContinueAsNewEvents
}

// continueAsNew drains the handlers and starts a new execution carrying the
// checkpoint.
func (r *runImpl) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	cp := *r.cp
	next := &GraphRunInput{RunID: r.cp.RunID, Checkpoint: &cp, Options: r.in.Options}
	workflow.GetLogger(ctx).Info("continuing as new", "history_events", workflow.GetInfo(ctx).GetCurrentHistoryLength(), "checkpoint", r.cp.Seq)
	return workflow.NewContinueAsNewError(ctx, GraphRun, next)
}

// visitHuman asks the node's question and waits for its answer.
func (r *runImpl) visitHuman(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, visitNo int, inBranch bool) (visitResult, error) {
	qid := fmt.Sprintf("%s-%d", node.ID, visitNo)
	text, err := graph.RenderPrompt(node.Question, graph.PromptData{Input: cur.Input, Output: r.cp.Outputs[node.ID], Visit: visitNo})
	if err != nil {
		text = node.Question
	}
	qs := []runstore.Question{{ID: qid, Text: text}}
	// A run resumed from a fail-stop that came after this very question was
	// answered takes that answer, instead of asking again.
	if p := r.cp.Pause; !inBranch && p != nil && p.NodeID == node.ID && p.Backend == "" && p.Visit == visitNo && answered(p.Questions) {
		r.cp.Pause, r.cp.Status = nil, runstore.StatusRunning
		return visitResult{output: map[string]any{"answer": p.Questions[0].Answer, "question_id": qid}, answered: p}, nil
	}
	if !inBranch {
		r.cp.Pause = &runstore.PauseInfo{NodeID: node.ID, Visit: visitNo, Questions: qs, Input: cur.Input}
		r.cp.Status = runstore.StatusWaiting
		r.setStatus(ctx, r.cp.Status)
		if err := r.save(ctx); err != nil {
			// Temporal's history keeps the wait durable; the run store
			// catches up at the next checkpoint.
			workflow.GetLogger(ctx).Warn("could not checkpoint the human question; waiting anyway", "node", node.ID, "error", err.Error())
		}
	}
	answers, err := r.ask(ctx, node.ID, qs)
	if err != nil {
		return visitResult{}, err
	}
	v := visitResult{output: map[string]any{"answer": answers[0], "question_id": qid}}
	if !inBranch {
		v.answered = r.cp.Pause
		for i := range v.answered.Questions {
			v.answered.Questions[i].Answered, v.answered.Questions[i].Answer = true, answers[i]
		}
		r.cp.Pause = nil
		r.cp.Status = runstore.StatusRunning
		r.setStatus(ctx, r.cp.Status)
	}
	return v, nil
}

func answered(qs []runstore.Question) bool {
	for _, q := range qs {
		if !q.Answered {
			return false
		}
	}
	return len(qs) > 0
}

// legacyVisitTool runs the node's argv in runs recorded before
// changeOneTripVisit. Since versionToolAffinity it runs on the worker that
// ran the run's last agent visit, whose working directory holds what that
// agent wrote (a tool oracle checks the writer's files), and only if that
// worker is gone on any worker.
func (r *runImpl) legacyVisitTool(ctx workflow.Context, node *graph.Node, cur runstore.Cursor, visitNo int, inBranch bool) (visitResult, error) {
	timeout := time.Duration(node.Timeout)
	if timeout <= 0 {
		timeout = defaultToolTimeout
	}
	opts := workflow.ActivityOptions{
		TaskQueue:           TaskQueue,
		StartToCloseTimeout: timeout + time.Minute,
		HeartbeatTimeout:    r.opts.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{activities.ErrTypeBadRequest},
		},
	}
	req := &activities.ToolRequest{RunID: r.cp.RunID, NodeID: node.ID, Visit: visitNo, Node: *node, Input: cur.Input}
	var out map[string]any
	affinity := workflow.GetVersion(ctx, changeToolAffinity, workflow.DefaultVersion, versionToolAffinity)
	if affinity == versionToolAffinity && r.lastQueue != "" && !inBranch {
		own := opts
		own.TaskQueue = r.lastQueue
		own.ScheduleToStartTimeout = r.opts.WorkerLostAfter
		own.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, own), acts.RunTool, req).Get(ctx, &out)
		if err == nil {
			return visitResult{output: out}, nil
		}
		if !workerLost(err) {
			return visitResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool node %q: %v", node.ID, err), ErrTypeNodeFailed, err)
		}
		workflow.GetLogger(ctx).Warn("the worker of the last agent visit is gone; running the tool on any worker, without that agent's files", "node", node.ID)
		r.lastQueue = ""
	}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), acts.RunTool, req).Get(ctx, &out); err != nil {
		return visitResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool node %q: %v", node.ID, err), ErrTypeNodeFailed, err)
	}
	return visitResult{output: out}, nil
}

// fanout runs each cursor as a concurrent branch until it reaches a join
// node, then returns the join's cursor, whose input maps each branch's last
// node to its output.
func (r *runImpl) fanout(ctx workflow.Context, starts []runstore.Cursor) (runstore.Cursor, error) {
	type branch struct {
		join string
		last string
		out  map[string]any
		err  error
	}
	results := make([]*branch, len(starts))
	wg := workflow.NewWaitGroup(ctx)
	for i, start := range starts {
		b := &branch{}
		results[i] = b
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			b.join, b.last, b.out, b.err = r.branch(ctx, start)
		})
	}
	wg.Wait(ctx)
	join := ""
	joined := map[string]any{}
	for _, b := range results {
		if b.err != nil {
			return runstore.Cursor{}, b.err
		}
		if join != "" && b.join != join {
			return runstore.Cursor{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("fan-out branches meet at different joins (%q and %q); every branch of one fan-out must reach the same join", join, b.join), ErrTypeGraph, nil)
		}
		join = b.join
		joined[b.last] = b.out
	}
	input := map[string]any{"branches": joined}
	return runstore.Cursor{Node: join, Input: input, From: starts[0].From}, nil
}

// branch walks one fan-out branch to its join.
func (r *runImpl) branch(ctx workflow.Context, cur runstore.Cursor) (join, last string, out map[string]any, err error) {
	nestedJoin := ""
	for {
		node, ok := r.g.Node(cur.Node)
		if !ok {
			return "", "", nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("edge leads to unknown node %q", cur.Node), ErrTypeGraph, nil)
		}
		if node.Kind == graph.KindJoin && node.ID != nestedJoin {
			return node.ID, last, out, nil
		}
		nestedJoin = ""
		if node.Kind == graph.KindEnd {
			return "", "", nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("fan-out branch reached end node %q before a join", node.ID), ErrTypeGraph, nil)
		}
		if node.Session == graph.SessionPersist {
			return "", "", nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %q has session: persist inside a fan-out branch; a persist conversation cannot run in parallel branches (move it out of the fan-out)", node.ID), ErrTypeGraph, nil)
		}
		v, err := r.visit(ctx, node, cur, true)
		if err != nil {
			return "", "", nil, err
		}
		r.deleteBlobs(ctx, v.deleteAfterCommit)
		next, err := r.selectNext(node, cur, v.output)
		if err != nil {
			return "", "", nil, err
		}
		if len(next) > 1 {
			j, err := r.fanout(ctx, next)
			if err != nil {
				return "", "", nil, err
			}
			// The nested fan-out's join is visited inside this branch.
			cur, nestedJoin = j, j.Node
			continue
		}
		last, out, cur = node.ID, v.output, next[0]
	}
}

package workflows

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// acts is only used for method expressions: the workflow names activities
// by method, never calls them.
var acts *activities.Activities

// save writes the next checkpoint to the run store. It runs as a local
// activity: the store is shared by every worker, and a local activity keeps
// a regular activity's round trip off every visit's critical path.
func (r *runImpl) save(ctx workflow.Context) error {
	return r.saveAs(ctx, nil)
}

// saveAs saves the next checkpoint as adjust changes it (nil: as it is in
// memory); memory itself is left as it is.
func (r *runImpl) saveAs(ctx workflow.Context, adjust func(cp *runstore.Checkpoint)) error {
	cp := *r.cp
	if adjust != nil {
		adjust(&cp)
	}
	cp.Seq = r.cp.Seq + 1
	cp, err := detached(cp)
	if err != nil {
		return fmt.Errorf("checkpoint %d cannot be written: %w", cp.Seq, err)
	}
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
	err = workflow.ExecuteLocalActivity(lctx, activities.SaveCheckpointName, &activities.CheckpointRequest{Checkpoint: &cp}).Get(ctx, nil)
	failTaskIfWorkerUnhealthy(r.cp.RunID, err)
	// The number is used up even when the save failed: the write may have
	// landed before the error, and a checkpoint is never overwritten.
	r.cp.Seq = cp.Seq
	return err
}

// detached is cp sharing no memory with the run's: a local activity is
// given its argument itself, not a copy, and writes it while the
// workflow's other branches go on changing their records and maps in
// place. A shallow copy let a checkpoint pair a branch's later position
// with the visit counts of before, and could fail the worker outright
// (a map written while the save read it). Numbers stay as written.
// encoding/json writes struct fields in order and map keys sorted, so the
// copy is the same on every replay; workflowcheck only sees reflection.
//
//workflowcheck:ignore
func detached(cp runstore.Checkpoint) (runstore.Checkpoint, error) {
	b, err := json.Marshal(&cp)
	if err != nil {
		return cp, err
	}
	var out runstore.Checkpoint
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return cp, err
	}
	out.PathLost = cp.PathLost
	return out, nil
}

// failTaskIfWorkerUnhealthy fails the workflow task when a local activity
// found this worker's own store broken (its probe failed too), not the
// run's: the task records nothing, a healthy worker runs it again, and
// this one takes no task until its store answers (activities.Health). A
// panic is how workflow code fails its task. One worker's broken store so
// never fail-stops a run.
func failTaskIfWorkerUnhealthy(run string, err error) {
	if isAppErrorType(err, activities.ErrTypeWorkerUnhealthy) {
		panic(fmt.Sprintf("run %s: %s", run, activities.ErrorText(err)))
	}
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
	// Named in the Web UI like every other step of a one-trip run; a
	// summary is metadata, so older executions replay unchanged without one.
	summary := ""
	switch {
	case r.viaVisit && r.refFree(ctx):
		summary = deleteSummaryOfNodes(r.cp.RunID, live)
	case r.viaVisit:
		summary = deleteSummary(live)
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary:             summary,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	if err := workflow.ExecuteLocalActivity(lctx, activities.DeleteBlobsName, &activities.DeleteBlobsRequest{Keys: live}).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("could not delete superseded session blobs; `tether delete` removes them with the run", "count", len(live), "error", err.Error())
	}
}

// deleteSummaryOfNodes names a DeleteBlobs step of run by how many blobs
// it deletes and whose (changeRefFreeNotes): a summary is an event the Web
// UI shows, and no event names a ref (ADR-089).
func deleteSummaryOfNodes(run string, keys []string) string {
	var nodes []string
	for _, k := range keys {
		if _, node, err := runstore.ParseRef(run, k); err == nil && node != "" && !slices.Contains(nodes, node) {
			nodes = append(nodes, node)
		}
	}
	s := fmt.Sprintf("delete %d superseded blobs", len(keys))
	if len(keys) == 1 {
		s = "delete a superseded blob"
	}
	if len(nodes) > 0 {
		s += " of " + strings.Join(nodes, ", ")
	}
	return oneLine(s, 160)
}

// deleteSummary names a DeleteBlobs step: how many blobs, and the first
// (runs recorded before changeRefFreeNotes).
func deleteSummary(keys []string) string {
	if len(keys) == 1 {
		return "delete superseded blob " + oneLine(keys[0], 120)
	}
	return fmt.Sprintf("delete %d superseded blobs (%s, …)", len(keys), oneLine(keys[0], 120))
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

// onBaseline decides, first thing in an execution, whether it takes the
// baseline's changes at once (changeBaseline). An execution recorded
// before the baseline has no marker for it, and asks for each change as
// it did.
func (r *runImpl) onBaseline(ctx workflow.Context) {
	r.baseline = workflow.GetVersion(ctx, changeBaseline, workflow.DefaultVersion, versionBaseline) == versionBaseline
}

// at reports whether this execution takes change at version. On the
// baseline, a change the baseline holds at that version or newer is taken
// without asking. Otherwise GetVersion says, recording the choice the
// first time; on the baseline, no marker (workflow.DefaultVersion) means
// the baseline's version of the change, so that a later version of a
// baseline change asks for itself and still replays the executions that
// took the baseline's. Every GetVersion of a change goes through here
// (TestEveryChangeAsksThroughTheBaseline).
func (r *runImpl) at(ctx workflow.Context, change string, version workflow.Version) bool {
	base := workflow.DefaultVersion
	if r.baseline {
		if v, ok := baselineChanges[change]; ok {
			base = v
		}
	}
	if base >= version {
		return true
	}
	v := workflow.GetVersion(ctx, change, workflow.DefaultVersion, version)
	if v == workflow.DefaultVersion {
		v = base
	}
	return v >= version
}

// oneTripVisits reports whether this run visits agents and tools in one
// Visit activity with a durable workspace (changeOneTripVisit).
func (r *runImpl) oneTripVisits(ctx workflow.Context) bool {
	return r.at(ctx, changeOneTripVisit, versionOneTripVisit)
}

// continueAsNewDue reports whether history is large enough to start over.
func (r *runImpl) continueAsNewDue(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= r.opts.ContinueAsNewEvents
}

// continueAsNew drains the handlers and starts a new execution carrying the
// checkpoint; with mv, the new execution moves to another build
// (move.go), and its input says why.
func (r *runImpl) continueAsNew(ctx workflow.Context, mv *runapi.Move) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	cp := *r.cp
	next := &runapi.GraphRunInput{RunID: r.cp.RunID, Checkpoint: &cp, Options: r.in.Options, Move: mv}
	if mv != nil {
		workflow.GetLogger(ctx).Info("continuing as new on another build", "from", mv.From, "to", mv.To, "reason", mv.Reason, "checkpoint", r.cp.Seq)
		return workflow.NewContinueAsNewError(ctx, GraphRun, next)
	}
	workflow.GetLogger(ctx).Info("continuing as new", "history_events", workflow.GetInfo(ctx).GetCurrentHistoryLength(), "checkpoint", r.cp.Seq)
	return workflow.NewContinueAsNewError(ctx, GraphRun, next)
}

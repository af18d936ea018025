// Package workflows holds GraphRun, the deterministic Temporal workflow that
// interprets a Tether graph: it visits nodes, evaluates edges, waits for
// answers, and keeps the run's whole state in one checkpoint that it saves to
// the run store and carries across continue-as-new.
package workflows

import "go.temporal.io/sdk/workflow"

// Workflow changes since the first recorded histories. Each is a
// workflow.GetVersion change id; histories under testdata/histories replay
// its old path (recorded by the build before it; <id>-before.json where
// no older history reaches it) and its new one, and
// TestEveryChangeReplaysBothBranches fails for an id without both. An
// old branch lives in legacy_*.go once it only serves old executions;
// docs/operations.md says when it may go ("Retiring a change id").
const (
	// changeToolAffinity: tool nodes run on the worker of the last agent
	// visit (tool-affinity.json).
	changeToolAffinity  = "tool-affinity"
	versionToolAffinity = 1
	// changeOneTripVisit: an agent or tool visit is one Visit activity on
	// any worker, which restores the run's workspace and the session,
	// runs, then snapshots and packs (one-trip-visit.json and the
	// workspace histories). Runs recorded before it keep the two-activity
	// visit on a worker's own queue (legacy_visit.go).
	changeOneTripVisit  = "one-trip-visit"
	versionOneTripVisit = 1
	// changeWorkspaceImport: a new run whose graph names its workspace's
	// source, started without one, imports it in an ImportWorkspace
	// activity first (workspace-import.json).
	changeWorkspaceImport  = "workspace-import"
	versionWorkspaceImport = 1
	// changeBudgets: a run whose spending crosses a budget of the graph
	// stops resumably (budget-stop.json).
	changeBudgets  = "budgets"
	versionBudgets = 1
	// changeBudgetAtStart: an execution that starts with a budget already
	// spent stops before its first visit, instead of after it
	// (budget-stop-at-start.json).
	changeBudgetAtStart  = "budget-at-start"
	versionBudgetAtStart = 1
	// changeQuestionsFirst: a question is registered before the run says
	// it waits (search attribute, checkpoint), so an answer sent the moment
	// `TetherStatus="waiting"` shows is taken, not dropped as unknown
	// (review-loop-questions-first.json).
	changeQuestionsFirst  = "questions-first"
	versionQuestionsFirst = 1
	// changeServerRetry: the server itself starts a visit again when its
	// worker is lost (up to maxLostWorkerRetries times, each attempt
	// packing to its own keys), and only failures that may pass count
	// against the run's maxVisitRestarts (lost-worker-retry.json).
	changeServerRetry  = "server-retry"
	versionServerRetry = 1
	// changeLostAttemptBlobs: once a visit that was started again (by the
	// server or the run) is committed, the blob keys its other attempts
	// were given are deleted with the superseded slots, instead of
	// staying until `tether delete` (lost-worker-retry-sweep.json).
	changeLostAttemptBlobs  = "lost-attempt-blobs"
	versionLostAttemptBlobs = 1

	// A persist visit that resumed its own slot packs only what it added
	// to the session, as a part after the slot's blobs (incremental
	// session packs); the slot is a base and its parts.
	changeIncrementalPacks  = "incremental-session-packs"
	versionIncrementalPacks = 1

	// changeBranchWorkspaces: each fan-out branch commits its visits on
	// a line of its own, recorded in the checkpoint, and the join keeps
	// the trunk's files, one branch's, or all of them merged
	// (branch-workspaces.json). Runs recorded before throw a branch's
	// files away (fanoutShared).
	changeBranchWorkspaces  = "branch-workspaces"
	versionBranchWorkspaces = 1

	// changeBranchVisitCounts: a save of a fan-out's progress sends the
	// store a copy of the visit counts without the visits in flight,
	// instead of putting that copy in memory while the save is in flight,
	// where a branch that finished its visit meanwhile counted one visit
	// too few and looped once more than its `when` allowed
	// (branch-visit-counts.json).
	changeBranchVisitCounts  = "branch-visit-counts"
	versionBranchVisitCounts = 1

	// changeEdgeDelivery: an inbound _session_id counts as delivered by an
	// edge only when that edge's own `with` mapping produced it (ADR-089
	// rule 1), not when the run's inputs, which every edge's input starts
	// from, carried it; the visit then runs fresh and its output says why
	// (edge-delivery.json). Runs recorded before took the final input's
	// id (edge-delivery-before.json, where a run input resumed a session).
	changeEdgeDelivery  = "edge-delivery"
	versionEdgeDelivery = 1

	// changeRetryNote: a visit the run starts again after its activity
	// was lost or failed in a way that may pass tells the next activity
	// what the last one had done (VisitRequest.RetryOf), so that its
	// agent or tool is told (retry-note.json). Visits the server starts
	// again read it from the lost attempt's heartbeats themselves.
	changeRetryNote  = "retry-note"
	versionRetryNote = 1

	// changeNotices: a run tells people when it waits for them (a notice
	// per question) and when it fails, completes or spends a budget, each
	// notice a TetherNotice child workflow per endpoint (notice.go;
	// notices.json). The endpoints come from the worker, through a local
	// activity, once per execution.
	changeNotices  = "notices"
	versionNotices = 1
	// changeGuide: an agent visit takes the notes a person sent its node
	// with the guide signal, and its path step records them
	// (guide.json). Runs recorded before never had a note to take.
	changeGuide  = "guide"
	versionGuide = 1

	// changeJoinWhy: a pick join's output says why it kept the branch it
	// kept: its pick and by expressions and each branch's values of them
	// (join-pick-why.json). The branch kept is the same as before.
	changeJoinWhy  = "join-pick-why"
	versionJoinWhy = 1

	// changeRunIDCheck: a new run asks the run store and Temporal, in a
	// CheckRunID local activity before its first visit, whether another
	// run has its id, and fails at once if one does (run-id-taken.json;
	// every history recorded since starts with the check).
	changeRunIDCheck  = "run-id-check"
	versionRunIDCheck = 1

	// changeCancelStatus: a run canceled through Temporal says so, in
	// TetherStatus and a last checkpoint, and ends canceled even when the
	// cancel reached it inside a visit (cancel-status.json).
	changeCancelStatus  = "cancel-status"
	versionCancelStatus = 1

	// changeEndedVisit: a run whose edges failed after a visit ended
	// records that visit in its checkpoint (Ended), and an execution
	// started from such a checkpoint (resume, possibly with a corrected
	// graph) chooses the edges again from the visit's output instead of
	// visiting the node again, so a tool's effects are not repeated
	// (ended-visit.json). Executions before it visited the node again.
	changeEndedVisit  = "ended-visit"
	versionEndedVisit = 1

	// changeCancelUncounted: a visit a cancel stopped is taken off the
	// run's path and visit counts, so it counts as no visit and a resume
	// runs it again under the same number (cancel-uncounted.json).
	// Executions before it counted it as a failed visit.
	changeCancelUncounted  = "cancel-uncounted"
	versionCancelUncounted = 1

	// changeBudgetMidVisit: an agent visit of the run's trunk that counts
	// against a budget gives the Visit activity its budgets, whose model
	// relay refuses the next model call once one is spent; the visit then
	// ends there, its slot and usage are committed, and the run stops
	// resumably with its cursor on the node, which a resume continues
	// (budget-mid-visit.json). Runs recorded before checked budgets only
	// after each visit (budget-stop.json).
	changeBudgetMidVisit  = "budget-mid-visit"
	versionBudgetMidVisit = 1

	// changeRefFreeNotes: the notes the workflow writes hide every blob
	// key in the text they quote (internal/blobref), as the visit's own
	// notes do: the "not resumed" note of an inbound _session_id, the
	// cause a visit started again is told (a store fault names the key
	// it failed on), the retry notes of the run's details; and a
	// DeleteBlobs step names the nodes whose blobs it deletes, not the
	// keys (ref-free-notes.json). Runs recorded before quoted the text
	// as it was, and named the first key.
	changeRefFreeNotes  = "ref-free-notes"
	versionRefFreeNotes = 1

	// changeRewoundQuestions: a run rewound to a checkpoint taken while it
	// waited for a question asks it again: a new notice, whose answer
	// links name this asking, instead of the notice (and links) sent
	// before the rewind, which may have answered it once already
	// (rewound-questions.json). Runs recorded before kept the earlier
	// notice (rewound-questions-before.json).
	changeRewoundQuestions  = "rewound-questions"
	versionRewoundQuestions = 1

	// changeBaseline: a new execution takes every change above at its
	// version (baselineChanges) without asking GetVersion for each: each
	// first GetVersion of an execution records a marker event and upserts
	// the TemporalChangeVersion search attribute (another event, and a
	// write of the server's visibility store), so a run paid about eight
	// of each before its first visit, and more as it reached the others
	// (baseline.json). Executions recorded before ask for each change as
	// they did. A change added below asks for itself, as before: the
	// baseline's set is never changed, a later baseline is a new version
	// with a set of its own.
	changeBaseline  = "baseline"
	versionBaseline = 1

	// changeMoveToCurrent: a run pinned to a build its worker deployment
	// no longer routes new runs to moves to the current build between two
	// visits, or while it waits for a person when the upgrade signal asks
	// it to check, by continuing as new; the new execution pins itself to
	// that build first (move.go; move-between-visits.json,
	// move-while-waiting.json, move-arrival.json).
	changeMoveToCurrent  = "move-to-current"
	versionMoveToCurrent = 1

	// changeMoveOnFreshRouting: a run does not move on a routing older
	// than the one the upgrade signal it took was sent on; it waits until
	// its worker has read that routing (move-on-fresh-routing.json).
	// Executions before it moved on their worker's view whatever its age:
	// a run that `tether upgrade-runs --replay` had pinned to the current
	// build moved back to the build before, on a worker that had not read
	// the switch yet, and waited there for workers that were gone
	// (move-on-fresh-routing-before.json). Asked only when the routing is
	// older than the signal, so no other run records it.
	changeMoveOnFreshRouting  = "move-on-fresh-routing"
	versionMoveOnFreshRouting = 1
)

// baselineChanges are the changes an execution on the baseline takes,
// each at its version. The legacy two-activity visit's tool affinity is
// not one: no execution on the baseline visits that way.
var baselineChanges = map[string]workflow.Version{
	changeOneTripVisit:      versionOneTripVisit,
	changeWorkspaceImport:   versionWorkspaceImport,
	changeBudgets:           versionBudgets,
	changeBudgetAtStart:     versionBudgetAtStart,
	changeQuestionsFirst:    versionQuestionsFirst,
	changeServerRetry:       versionServerRetry,
	changeLostAttemptBlobs:  versionLostAttemptBlobs,
	changeIncrementalPacks:  versionIncrementalPacks,
	changeBranchWorkspaces:  versionBranchWorkspaces,
	changeBranchVisitCounts: versionBranchVisitCounts,
	changeEdgeDelivery:      versionEdgeDelivery,
	changeRetryNote:         versionRetryNote,
	changeNotices:           versionNotices,
	changeGuide:             versionGuide,
	changeJoinWhy:           versionJoinWhy,
	changeRunIDCheck:        versionRunIDCheck,
	changeCancelStatus:      versionCancelStatus,
	changeEndedVisit:        versionEndedVisit,
	changeCancelUncounted:   versionCancelUncounted,
	changeBudgetMidVisit:    versionBudgetMidVisit,
	changeRefFreeNotes:      versionRefFreeNotes,
	changeRewoundQuestions:  versionRewoundQuestions,
}

// Package runapi is the contract between `tether` and the worker: the
// names GraphRun is registered and driven by (workflow, task queue,
// signals, update, query, search attributes, error types) and the values
// that cross between them (input, result, state, answer, guide). The
// workflows package uses these very types, so a change here is a change
// of the wire format that every replay history checks; `tether` imports
// only this package, never the workflow or the activities that run it.
package runapi

// Names Temporal users see. They are part of Tether's interface: the README
// shows how to drive a run with the plain temporal CLI using them.
const (
	// TaskQueue is the shared queue every worker polls.
	TaskQueue = "tether"
	// WorkflowType is GraphRun's registered name.
	WorkflowType = "GraphRun"
	// SignalAnswer delivers a human's answer, fire and forget.
	SignalAnswer = "answer"
	// UpdateAnswer delivers the same answer and reports whether it was
	// accepted; its validator rejects unknown or already-answered questions.
	UpdateAnswer = "answer"
	// QueryState returns the run's State.
	QueryState = "state"
	// NoticeWorkflowType is Notice's registered name: the workflow that
	// delivers one notice of a run to one endpoint.
	NoticeWorkflowType = "TetherNotice"
	// SignalGuide delivers a Guide: a person's note to an agent node, added
	// to the prompt of its next visit (`tether guide`, the console).
	SignalGuide = "guide"
)

// Error types of GraphRun's failures; `tether` and callers branch on them.
const (
	// ErrTypeResumable is a fail-stop: the failure details carry the
	// checkpoint to resume from (ADR-089's FailRunResumable).
	ErrTypeResumable = "FailedResumable"
	// ErrTypeNodeFailed is a node whose execution failed.
	ErrTypeNodeFailed = "NodeFailed"
	// ErrTypeNoEdge is a node none of whose edges matched.
	ErrTypeNoEdge = "NoEdgeMatched"
	// ErrTypeMaxVisits is a node visited more than its max_visits.
	ErrTypeMaxVisits = "MaxVisitsExceeded"
	// ErrTypeGraph is a graph the run cannot interpret.
	ErrTypeGraph = "InvalidGraph"
	// ErrTypeWorkspace is a workspace the run cannot start from.
	ErrTypeWorkspace = "WorkspaceFailed"
	// ErrTypeRunIDTaken is a new run whose id another run has, in
	// Temporal or in the run store; it failed before its first visit.
	ErrTypeRunIDTaken = "RunIDTaken"
	// ErrTypeRunIDUnchecked is a new run that could not check its id (the
	// run store and Temporal did not answer); it did nothing.
	ErrTypeRunIDUnchecked = "RunIDUnchecked"
	// ErrTypeBudget is a run stopped because it spent a budget; like
	// ErrTypeResumable, its details carry the checkpoint to resume from,
	// once the budget is raised (`tether resume --max-tokens/--max-cost-usd`).
	ErrTypeBudget = "BudgetExceeded"
)

// RunWorkflowID returns the workflow ID of a run: the run ID itself, so that
// the Temporal CLI and Web UI find a run by the ID `tether` printed.
func RunWorkflowID(runID string) string { return runID }

// WorkerQueue returns the task queue only one worker polls. Every activity
// of a node visit after the first runs there, so the live session files the
// first one restored are the ones the rest use.
func WorkerQueue(workerID string) string { return TaskQueue + "/" + workerID }

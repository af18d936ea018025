package runapi

import (
	"time"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// GraphRunInput starts a run. A new run sets Graph and Inputs; a resumed,
// rewound, forked or continued run sets Checkpoint instead, and the run
// continues from it.
type GraphRunInput struct {
	RunID      string               `json:"run_id"`
	Graph      *graph.Graph         `json:"graph,omitempty"`
	Inputs     map[string]any       `json:"inputs,omitempty"`
	Checkpoint *runstore.Checkpoint `json:"checkpoint,omitempty"`
	Options    Options              `json:"options,omitempty"`
	// Workspace is the snapshot a new run's workspace starts from, already
	// in the blob store (`tether run --workspace` imports it); nil starts
	// empty.
	Workspace *runstore.WorkspaceState `json:"workspace,omitempty"`
	// GitHub is the issue or pull request a new run started from (a
	// GitHub delivery); nil for a run started otherwise.
	GitHub *runstore.GitHubThread `json:"github,omitempty"`
	// Move is set on the execution a run continued as new into to move
	// to its deployment's current build (Move).
	Move *Move `json:"move,omitempty"`
}

// Options tune a run. Zero values mean the defaults.
type Options struct {
	// ContinueAsNewEvents continues the run as new once its history has
	// this many events, even if the server has not suggested it yet.
	ContinueAsNewEvents int `json:"continue_as_new_events,omitempty"`
	// NodeTimeout bounds one agent visit.
	NodeTimeout time.Duration `json:"node_timeout,omitempty"`
	// WorkerLostAfter is how long a visit waits for the worker that holds
	// its live session before it restarts the visit on another worker.
	WorkerLostAfter time.Duration `json:"worker_lost_after,omitempty"`
	// HeartbeatTimeout detects a worker that died mid-visit.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// SessionHistory is how many earlier slots of each persist node keep
	// their blobs, for rewinds (negative: none).
	SessionHistory int `json:"session_history,omitempty"`
}

// Defaults for Options.
const (
	DefaultContinueAsNewEvents = 8000
	DefaultNodeTimeout         = 30 * time.Minute
	DefaultWorkerLostAfter     = 30 * time.Second
	DefaultHeartbeatTimeout    = 30 * time.Second
	DefaultSessionHistory      = 10
)

// GraphRunResult is a completed run.
type GraphRunResult struct {
	RunID   string          `json:"run_id"`
	Status  string          `json:"status"`
	EndNode string          `json:"end_node"`
	Output  map[string]any  `json:"output,omitempty"`
	Path    []runstore.Step `json:"path"`
	Visits  int             `json:"visits"`
	// Usage is what the whole run cost, as the agent CLIs reported it.
	Usage agent.Usage `json:"usage,omitzero"`
	// NodeUsage is what each agent node's visits cost, and NodeVisits how
	// many visits each node had: what `--follow` says of a run that
	// completed, without asking a worker to replay it. A result of a
	// worker built before has neither.
	NodeUsage  map[string]agent.Usage `json:"node_usage,omitempty"`
	NodeVisits map[string]int         `json:"node_visits,omitempty"`
}

// Answer is a human's reply to a pending question, sent as the `answer`
// signal or update.
type Answer struct {
	QuestionID string `json:"question_id"`
	Text       string `json:"text"`
}

// Guide is a person's note to an agent node, sent as the `guide` signal:
// the node's next visit gets it after its prompt, as guidance. By names
// who sent it.
type Guide struct {
	Node string `json:"node"`
	Text string `json:"text"`
	By   string `json:"by,omitempty"`
}

// MaxGuideText bounds one note's text, and MaxGuidance the notes waiting
// for one node.
const (
	MaxGuideText = 4096
	MaxGuidance  = 20
)

// State is what the `state` query returns. It never carries a session blob
// or a state ref.
type State struct {
	RunID     string                    `json:"run_id"`
	Graph     string                    `json:"graph"`
	Status    string                    `json:"status"`
	Current   []string                  `json:"current,omitempty"`
	Visits    map[string]int            `json:"visits,omitempty"`
	Outputs   map[string]map[string]any `json:"outputs,omitempty"`
	Sessions  map[string]SessionView    `json:"sessions,omitempty"`
	Workspace *WorkspaceView            `json:"workspace,omitempty"`
	// Usage is what each agent node's visits cost, and TotalUsage the run.
	Usage      map[string]agent.Usage `json:"usage,omitempty"`
	TotalUsage agent.Usage            `json:"total_usage,omitzero"`
	Questions  []PendingQuestion      `json:"questions,omitempty"`
	Path       []runstore.Step        `json:"path,omitempty"`
	// Steps counts every visit so far; Path holds only the recent ones.
	Steps int    `json:"steps"`
	Error string `json:"error,omitempty"`
	// Checkpoint is the sequence number of the last saved checkpoint.
	Checkpoint int64 `json:"checkpoint"`
	// Guidance are the notes waiting for their node's next visit.
	Guidance []runstore.Guidance `json:"guidance,omitempty"`
	// GraphEdits are the corrected graphs the run went on with.
	GraphEdits []runstore.GraphEdit `json:"graph_edits,omitempty"`
}

// SessionView is a persist node's conversation, without its state ref.
type SessionView struct {
	Backend   string `json:"backend"`
	SessionID string `json:"session_id"`
}

// WorkspaceView is the run's latest workspace snapshot.
type WorkspaceView struct {
	Commit    string `json:"commit,omitempty"`
	Files     int    `json:"files"`
	Bytes     int64  `json:"bytes"`
	Snapshots int    `json:"snapshots"`
	// Notes say what the latest snapshot left out, and why.
	Notes []string `json:"notes,omitempty"`
	// Branches are the open branches of a fan-out in flight.
	Branches []BranchView `json:"branches,omitempty"`
}

// BranchView is one open fan-out branch: its head, and the node it visits
// next ("" once it waits at its join).
type BranchView struct {
	Name   string `json:"name"`
	Commit string `json:"commit,omitempty"`
	Next   string `json:"next,omitempty"`
	Join   string `json:"join,omitempty"`
}

// PendingQuestion is a question waiting for an answer.
type PendingQuestion struct {
	ID   string `json:"id"`
	Node string `json:"node"`
	Text string `json:"text"`
	// AllowEmpty says the question takes an empty answer.
	AllowEmpty bool `json:"allow_empty,omitempty"`
	// Options are the answers a human node offers (its options:).
	Options []string `json:"options,omitempty"`
	// Asking names this asking of the question: the key of the notice
	// that told people of it (waiting/ID/SEQ, SEQ the checkpoint the run
	// had reached when it asked); empty when no notice went out. The run
	// can ask a question again under the same id (after a rewind, or a
	// resume that runs its node again); an answer link names the asking
	// it was sent for, and answers no other (internal/answerlink).
	Asking string `json:"asking,omitempty"`
}

package activities

import (
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// Error types of activity failures. The workflow branches on them.
const (
	// ErrTypeSessionUnavailable: a blob to restore is missing, corrupt or
	// belongs to another session. The visit strips its session keys and
	// runs fresh.
	ErrTypeSessionUnavailable = "SessionUnavailable"
	// ErrTypeCheckpoint: a checkpoint could not be written.
	ErrTypeCheckpoint = "CheckpointFailed"
	// ErrTypeBadRequest: the activity was called with input it can never
	// accept.
	ErrTypeBadRequest = "BadRequest"
	// ErrTypeWorkerStopping: the worker shut down in the middle of a visit;
	// the visit starts again elsewhere.
	ErrTypeWorkerStopping = "WorkerStopping"
	// ErrTypeMayPass: a visit the server retries on lost workers failed
	// in a way that may pass (a CLI that crashed, a store that stayed
	// down). It is final for the server, so that the workflow restarts the
	// visit itself, with new keys and after a pause, a bounded number of
	// times.
	ErrTypeMayPass = "VisitMayPass"
	// ErrTypeWorkerUnhealthy: a checkpoint could not be saved because
	// this worker's store fails a probe (activities.Health). The workflow
	// fails its task instead, so that another worker runs it again: one
	// worker's broken store never fail-stops a run.
	ErrTypeWorkerUnhealthy = "WorkerUnhealthy"
)

// Registered names of the activities the workflow runs as local
// activities. A local activity is named, not passed as a method value: the
// workflow holds no Activities value to call it on.
const (
	SaveCheckpointName = "SaveCheckpoint"
	DeleteBlobsName    = "DeleteBlobs"
)

// ExecuteResult is what a visit produced. It never carries session bytes:
// they went to the blob store under PackTo or PauseTo.
type ExecuteResult struct {
	Output      map[string]any `json:"output"`
	Backend     string         `json:"backend"`
	SessionID   string         `json:"session_id,omitempty"`
	Fingerprint string         `json:"fingerprint,omitempty"`
	// Queue is the worker queue the visit ran on.
	Queue string `json:"queue"`
	// Questions is set when the agent asked the user mid-visit.
	Questions        []agent.Question `json:"questions,omitempty"`
	PendingToolUseID string           `json:"pending_tool_use_id,omitempty"`
	// Packed reports that the session went to PackTo (or PauseTo when
	// Questions is set); PackError says why not.
	Packed     bool   `json:"packed,omitempty"`
	PackDigest string `json:"pack_digest,omitempty"`
	PackError  string `json:"pack_error,omitempty"`
	// PackedTo is the key the session went to (PackTo or PauseTo), and
	// PackSize the blob's size.
	PackedTo string `json:"packed_to,omitempty"`
	PackSize int64  `json:"pack_size,omitempty"`
	// PackDeltaOf, when set, says the blob at PackedTo is an incremental
	// pack: what the visit added to the session whose newest blob has this
	// digest (the resumed slot's runstore.NodeSessionSlot.LastDigest). The
	// slot is then that slot with this part after its own.
	PackDeltaOf string `json:"pack_delta_of,omitempty"`
	// Usage is what this visit cost, as the CLI reported it (each token
	// count at least what the worker's model relay read).
	Usage agent.Usage `json:"usage,omitzero"`
	// BudgetStop, when set, says which budget was spent mid-visit: the
	// relay refused the agent's next model call, and the visit ended
	// there, its session packed as far as it got.
	BudgetStop string `json:"budget_stop,omitempty"`
}

// ToolRequest runs a tool node's argv.
type ToolRequest struct {
	RunID  string         `json:"run_id"`
	NodeID string         `json:"node_id"`
	Visit  int            `json:"visit"`
	Node   graph.Node     `json:"node"`
	Input  map[string]any `json:"input,omitempty"`
}

// CheckpointRequest saves one checkpoint.
type CheckpointRequest struct {
	Checkpoint *runstore.Checkpoint `json:"checkpoint"`
}

// DeleteBlobsRequest deletes session blobs; a missing key is not an error.
type DeleteBlobsRequest struct {
	Keys []string `json:"keys"`
}

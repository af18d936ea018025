package runstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/agent"
)

// FormatVersion is the checkpoint format this build writes and reads.
const FormatVersion = 1

// ErrUnknownVersion is returned when a checkpoint's format version is not
// FormatVersion.
var ErrUnknownVersion = errors.New("runstore: unknown checkpoint format version")

// ErrInvalidCheckpoint reports a checkpoint whose content cannot be what
// Tether wrote: the store holding it is untrusted, so a field that would
// reach a program's arguments or a path is checked before anything uses it.
var ErrInvalidCheckpoint = errors.New("runstore: invalid checkpoint")

// Run statuses.
const (
	StatusRunning   = "running"
	StatusWaiting   = "waiting" // paused on a human question
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	// StatusFailedResumable is a fail-stop: the checkpoint is consistent
	// and `tether resume` continues from it.
	StatusFailedResumable = "failed_resumable"
	// StatusCanceled is a run canceled through Temporal (`tether cancel`,
	// `temporal workflow cancel`); `tether resume` continues it from its
	// last checkpoint. A terminated run cannot say so: it stays at the
	// status it had.
	StatusCanceled = "canceled"
)

// Checkpoint is the whole durable state of one run: what the GraphRun
// workflow keeps in memory, what continue-as-new carries, and what the run
// store records after every step that must survive. It never holds blob
// bytes: sessions are referenced by StateRef, a key in the blob store.
type Checkpoint struct {
	Version int    `json:"version"`
	RunID   string `json:"run_id"`
	// Seq is this checkpoint's sequence number in the run store; 0 means
	// not yet saved.
	Seq    int64  `json:"seq"`
	Status string `json:"status"`
	// Graph is the graph the run executes, so resume, fork and status work
	// from the store alone: its JSON as internal/graph writes it
	// (graph.FromJSON reads it). The run store keeps the bytes as they
	// came and never reads them, so it links no DSL, and a checkpoint
	// written again carries, and signs, the graph its writer gave it.
	Graph  json.RawMessage `json:"graph"`
	Inputs map[string]any  `json:"inputs,omitempty"`

	// Cursor holds the node(s) to visit next, in order.
	Cursor []Cursor `json:"cursor,omitempty"`
	// Outputs are each node's latest output, with stamps and without any
	// transient key.
	Outputs map[string]map[string]any `json:"outputs,omitempty"`
	Visits  map[string]int            `json:"visits,omitempty"`
	// NodeSessions are the completed-visit slots of persist nodes.
	NodeSessions map[string]NodeSessionSlot `json:"node_sessions,omitempty"`
	// RetainedSessions are the blobs of each persist node's earlier slots,
	// oldest first: a slot's blob is deleted only once it falls out of
	// this window (after a successful checkpoint, as ADR-089 orders), so a
	// rewind within it continues the conversation it rewinds to.
	RetainedSessions map[string][]string `json:"retained_sessions,omitempty"`
	// RetainedParts are the incremental packs of retained slots, by node
	// and by the base blob they follow (a key of RetainedSessions): a
	// retained slot is kept, and deleted, with all its parts.
	RetainedParts map[string]map[string][]string `json:"retained_parts,omitempty"`
	// Pause is set while an agent node waits on an in-node ask_user or a
	// human node waits on its question.
	Pause *PauseInfo `json:"pause,omitempty"`
	// Stopped is the agent visit a spent budget stopped mid-turn (the
	// worker's model relay refused its next model call): the run stopped
	// resumably with its cursor on that node, and a resume continues the
	// visit, under the same number, in its own conversation.
	Stopped *StoppedVisit `json:"stopped,omitempty"`
	// LoopSnapshots keep a looping node's earlier outputs.
	LoopSnapshots []LoopSnapshot `json:"loop_snapshots,omitempty"`
	// Path is the most recent visits, in order; PathTotal counts them all.
	Path      []Step `json:"path,omitempty"`
	PathTotal int    `json:"path_total,omitempty"`
	// PathBlocks name the stored blocks of Path (pathlog.go), whose steps
	// go at PathBlocksAt of the inline ones. Only a checkpoint as stored
	// has them: Save splits the path and Get joins it again.
	PathBlocks   []PathBlock `json:"path_blocks,omitempty"`
	PathBlocksAt int         `json:"path_blocks_at,omitempty"`
	// PathLost counts the earliest steps Get could not read back (a
	// path block missing or damaged); Path starts after them.
	PathLost int `json:"-"`
	// Transitions is every distinct edge the run has taken, in the order
	// first taken: what `tether graph --run` draws.
	Transitions []Transition `json:"transitions,omitempty"`
	// Error is the failure message of a failed run.
	Error string `json:"error,omitempty"`
	// Lineage names the run and sequence this run was forked or rewound
	// from.
	Lineage *Lineage `json:"lineage,omitempty"`
	// Usage sums what each agent node's visits cost, as the CLIs reported
	// it; budgets are checked against it.
	Usage map[string]agent.Usage `json:"usage,omitempty"`
	// Workspace is the run's working directory as of this checkpoint: the
	// snapshot commit and the packs that hold it. Nil for a run that has
	// never had a workspace (every run before workspaces existed).
	Workspace *WorkspaceState `json:"workspace,omitempty"`
	// Branches are the open branches of the fan-out in flight, in the
	// order of its start cursors (Cursor): each one's files and how far
	// it got, so that a resume or rewind to this checkpoint continues
	// every branch where it stood. Nil outside a fan-out.
	Branches []BranchState `json:"branches,omitempty"`
	// Guidance are the notes people sent agent nodes (the guide signal)
	// that no visit has taken yet, oldest first.
	Guidance []Guidance `json:"guidance,omitempty"`
	// Joined are the branches of the latest fan-outs that reached their
	// join (at most MaxJoined, newest last, without their snapshots'
	// notes): what `tether workspace log --all`, `export --branch` and a
	// prompt's .workspace.branches read.
	Joined []BranchState `json:"joined,omitempty"`
	// GitHub is the issue or pull request the run started from and the
	// pull request it opened (github.go); nil for a run started otherwise.
	GitHub *GitHubThread `json:"github,omitempty"`
	// Reviews are reviews of the run's pull request that arrived while no
	// review node waited, oldest first: the next visit of their node takes
	// them as its answer instead of waiting (github.go).
	Reviews []QueuedReview `json:"reviews,omitempty"`
	// Ended is the visit after which the run failed to go on: the visit
	// finished (its output and step are recorded, the cursor still names
	// its node) and no edge out of it could be followed. An execution that
	// starts from this checkpoint chooses the edge again from that output
	// instead of visiting the node again; `tether resume --graph` clears
	// it when the corrected graph changed the node, or is asked to.
	Ended *EndedVisit `json:"ended,omitempty"`
	// GraphEdits are the corrected graphs the run continued with, oldest
	// first (`tether resume|rewind|fork --graph`).
	GraphEdits []GraphEdit `json:"graph_edits,omitempty"`
}

// EndedVisit names a finished visit whose edges failed.
type EndedVisit struct {
	Node  string `json:"node"`
	Visit int    `json:"visit"`
}

// GraphEdit is a corrected graph a run went on with: the checkpoint it
// took over at, how (resume, rewind, fork), the file it came from, its
// digest, and what changed from the graph before.
type GraphEdit struct {
	Seq  int64  `json:"seq"`
	Via  string `json:"via"`
	File string `json:"file,omitempty"`
	// Digest is the SHA-256 of the new graph as a graph file (hex).
	Digest  string   `json:"digest"`
	Changes []string `json:"changes,omitempty"`
	// Rerun names the node whose ended visit runs again (the new graph
	// changed it, or the person asked); "" when none does.
	Rerun string `json:"rerun,omitempty"`
	// At is when it was made (RFC 3339, the command's clock), By who.
	At string `json:"at,omitempty"`
	By string `json:"by,omitempty"`
}

// GraphName is the name of the checkpoint's graph ("" when it has none
// that reads), for messages that say which run a checkpoint is of.
func (cp *Checkpoint) GraphName() string {
	var g struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(cp.Graph, &g)
	return g.Name
}

// BranchState is one fan-out branch's line of the workspace: it starts at
// the trunk's commit at the fan-out (Base) and each of its visits commits
// on top of the last.
type BranchState struct {
	// Name is the node the branch's fan-out edge led to; a branch of a
	// fan-out nested inside another branch is "outer.inner".
	Name string `json:"name"`
	// Base is the trunk's commit at the fan-out ("" for an empty
	// workspace); Workspace is the branch's head.
	Base      string          `json:"base,omitempty"`
	Workspace *WorkspaceState `json:"workspace,omitempty"`
	// Nodes are the nodes the branch visited, in order of their first
	// visit; Last is the latest.
	Nodes []string `json:"nodes,omitempty"`
	Last  string   `json:"last,omitempty"`
	// Next is the branch's next visit; nil once it reached Join.
	Next *Cursor `json:"next,omitempty"`
	// NestedJoin says Next is the join of a fan-out nested in the branch,
	// which the branch visits itself.
	NestedJoin bool   `json:"nested_join,omitempty"`
	Join       string `json:"join,omitempty"`
	// JoinVisit is the join's visit number, and Kept whether the join kept
	// this branch's files (Joined only).
	JoinVisit int  `json:"join_visit,omitempty"`
	Kept      bool `json:"kept,omitempty"`
}

// MaxJoined bounds Checkpoint.Joined, which every checkpoint (and every
// continue-as-new input) carries: one fan-out of the widest kind, or the
// latest few narrower ones.
const MaxJoined = 16

// Ref is the branch's name in `tether workspace log --all` and git:
// JOIN-VISIT/NAME once joined, open/NAME before, with a nested branch's
// dots as slashes.
func (b *BranchState) Ref() string {
	name := strings.ReplaceAll(b.Name, ".", "/")
	if b.JoinVisit == 0 {
		return "open/" + name
	}
	return fmt.Sprintf("%s-%d/%s", b.Join, b.JoinVisit, name)
}

// ValidateBranchName checks a branch name: node ids joined by dots. It
// becomes a directory name on workers and a git ref.
func ValidateBranchName(name string) error {
	if name == "" || len(name) > 4*maxNodeIDLen {
		return fmt.Errorf("%w: branch name %q must be node ids joined by dots, at most %d characters", ErrInvalidID, name, 4*maxNodeIDLen)
	}
	for _, part := range strings.Split(name, ".") {
		if err := ValidateNodeID(part); err != nil {
			return fmt.Errorf("%w: branch name %q: %v", ErrInvalidID, name, err)
		}
	}
	return nil
}

// validate checks what of a branch reaches paths, refs and git.
func (b *BranchState) validate() error {
	if err := ValidateBranchName(b.Name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidCheckpoint, err)
	}
	if b.Join != "" {
		if err := ValidateNodeID(b.Join); err != nil {
			return fmt.Errorf("%w: branch %q: join: %v", ErrInvalidCheckpoint, b.Name, err)
		}
	}
	if b.Base != "" && !ValidObjectID(b.Base) {
		return fmt.Errorf("%w: branch %q base %q is not a git object id; the checkpoint was not written by tether", ErrInvalidCheckpoint, b.Name, b.Base)
	}
	return b.Workspace.Validate()
}

// BranchKeys lists the blob keys the checkpoint's branches name.
func (cp *Checkpoint) BranchKeys() []string {
	var out []string
	for _, list := range [][]BranchState{cp.Branches, cp.Joined} {
		for i := range list {
			out = append(out, list[i].Workspace.Keys()...)
		}
	}
	return out
}

// WorkspaceState names one snapshot of a run's workspace: a commit of the
// run's own git history and the packs in the blob store that together hold
// every object reachable from it. It is small and carried in every
// checkpoint; the files themselves never enter a checkpoint.
type WorkspaceState struct {
	// Commit is the snapshot's commit id (hex); "" is the empty workspace.
	Commit string `json:"commit,omitempty"`
	// Base is the commit the run started from ("" when it started empty):
	// what a diff of the run's changes compares against.
	Base string `json:"base,omitempty"`
	// Packs hold the objects of Commit and its ancestors, oldest first.
	Packs []WorkspacePack `json:"packs,omitempty"`
	// Files and Bytes count the snapshot's files and their total size.
	Files int   `json:"files,omitempty"`
	Bytes int64 `json:"bytes,omitempty"`
	// Commits counts the snapshots in the run's history.
	Commits int `json:"commits,omitempty"`
	// Notes say what the latest snapshot left out of the workspace and
	// why (credentials the run's source did not track, links leaving it,
	// special files), one line each and at most MaxNotes, never a
	// file's content: what `tether status` shows.
	Notes []string `json:"notes,omitempty"`
}

// MaxNotes caps WorkspaceState.Notes, which every checkpoint carries.
const MaxNotes = 50

// WorkspacePack is one pack of workspace objects in the blob store. Its
// key names its content (WorkspacePackKey), so a pack is written once and
// never changes.
type WorkspacePack struct {
	Key string `json:"key"`
	// Base is the commit whose objects the pack leaves out ("" for a pack
	// that starts at the root); Tip the newest commit it holds.
	Base string `json:"base,omitempty"`
	Tip  string `json:"tip"`
	Size int64  `json:"size"`
}

// Validate checks that every commit the state names is a git object id
// (40 or 64 lowercase hex digits). The ids reach git's command line in
// `tether workspace`, so a forged "--output=…" must never pass as one.
func (w *WorkspaceState) Validate() error {
	if w == nil {
		return nil
	}
	check := func(what, id string) error {
		if id != "" && !ValidObjectID(id) {
			return fmt.Errorf("%w: workspace %s %q is not a git object id; the checkpoint was not written by tether", ErrInvalidCheckpoint, what, id)
		}
		return nil
	}
	if err := errors.Join(check("commit", w.Commit), check("base", w.Base)); err != nil {
		return err
	}
	for _, p := range w.Packs {
		if err := errors.Join(check("pack base", p.Base), check("pack tip", p.Tip)); err != nil {
			return err
		}
	}
	return nil
}

// ValidObjectID reports whether s is a git object id: 40 (SHA-1) or 64
// (SHA-256) lowercase hex digits.
func ValidObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Keys lists the blob keys the state names.
func (w *WorkspaceState) Keys() []string {
	if w == nil {
		return nil
	}
	out := make([]string, 0, len(w.Packs))
	for _, p := range w.Packs {
		out = append(out, p.Key)
	}
	return out
}

// Cursor is a pending visit: the node and the input it will receive.
type Cursor struct {
	Node  string         `json:"node"`
	Input map[string]any `json:"input,omitempty"`
	// From is the node whose edge delivered Input ("" for the start).
	From string `json:"from,omitempty"`
	// Delivered is the _session_id that edge's own `with` mapping produced
	// ("" when it produced none). ADR-089's rule 1 counts only that as
	// delivered: the rest of Input starts from the run's inputs, which may
	// carry a _session_id of their own. Nil in cursors recorded before it
	// was.
	Delivered *string `json:"delivered,omitempty"`
}

// NodeSessionSlot is a persist node's last completed visit, exactly as in
// ADR-089. An empty StateRef means "no slot".
type NodeSessionSlot struct {
	Backend         string `json:"backend"`
	SessionID       string `json:"session_id,omitempty"`
	Fingerprint     string `json:"fingerprint,omitempty"`
	StateRef        string `json:"state_ref,omitempty"`
	ConversationRef string `json:"conversation_ref,omitempty"`
	// Digest is the sha256 of the blob at StateRef, as packed; a restore
	// refuses a blob that differs. Empty in slots written before digests
	// were recorded.
	Digest string `json:"digest,omitempty"`
	// Size is the size of the blob at StateRef, when recorded.
	Size int64 `json:"size,omitempty"`
	// Parts are the incremental packs after the one at StateRef, in the
	// order they apply (packer.PackDelta): the session is the base with
	// every part applied. Empty for a slot that is one whole archive.
	Parts []SessionPart `json:"parts,omitempty"`
}

// SessionPart is one incremental pack of a slot: its blob, the blob's
// sha256, and its size.
type SessionPart struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Refs lists the slot's blobs, the base first.
func (s NodeSessionSlot) Refs() []string {
	if s.StateRef == "" {
		return nil
	}
	refs := []string{s.StateRef}
	for _, p := range s.Parts {
		refs = append(refs, p.Ref)
	}
	return refs
}

// LastDigest is the digest of the slot's newest blob: the last part's, or
// the base's when it has none. An incremental pack extends a slot only
// when the session it resumed carries this digest.
func (s NodeSessionSlot) LastDigest() string {
	if n := len(s.Parts); n > 0 {
		return s.Parts[n-1].Digest
	}
	return s.Digest
}

// PauseInfo describes what a waiting run waits for.
type PauseInfo struct {
	NodeID    string     `json:"node_id"`
	Visit     int        `json:"visit"`
	Questions []Question `json:"questions"`
	// Backend and SessionID identify the in-flight CLI conversation of an
	// agent that asked the user mid-visit.
	Backend          string `json:"backend,omitempty"`
	SessionID        string `json:"session_id,omitempty"`
	Fingerprint      string `json:"fingerprint,omitempty"`
	PendingToolUseID string `json:"pending_tool_use_id,omitempty"`
	// BackendSessionStateRef is the pause blob of that conversation. It is
	// never a NodeSessions slot.
	BackendSessionStateRef string `json:"backend_session_state_ref,omitempty"`
	// BackendSessionDigest is the sha256 of that blob.
	BackendSessionDigest string `json:"backend_session_digest,omitempty"`
	// Input is the input of the paused visit, for re-invocation.
	Input map[string]any `json:"input,omitempty"`
}

// Question is one pending question.
type Question struct {
	ID string `json:"id"`
	// AgentID is the id the agent gave an in-node question; the answer is
	// handed back to the agent under it.
	AgentID  string `json:"agent_id,omitempty"`
	Text     string `json:"text"`
	Answered bool   `json:"answered,omitempty"`
	Answer   string `json:"answer,omitempty"`
	// AllowEmpty says the question takes an empty answer (a human node's
	// allow_empty); others refuse one.
	AllowEmpty bool `json:"allow_empty,omitempty"`
	// Notice names the notice sent for the question (its event key), so
	// that a run resumed while it waits does not send it again.
	Notice string `json:"notice,omitempty"`
}

// LoopSnapshot is an earlier output of a node that was visited again.
type LoopSnapshot struct {
	Node   string         `json:"node"`
	Visit  int            `json:"visit"`
	Output map[string]any `json:"output,omitempty"`
}

// Step is one visit in a run's path: when it ran, and what that visit
// itself produced, in brief. Outputs keep only each node's latest output,
// so a step is the one place where an earlier visit's cost, exit code and
// output remain; a timeline of a run reads them from here.
//
// Every checkpoint carries up to 200 recent steps (and continue-as-new
// all of them), so a step stays small: figures and one line, never an
// output. Steps recorded before Outcome existed have it and the fields
// after it empty.
type Step struct {
	Node  string `json:"node"`
	Visit int    `json:"visit"`
	// Status is "ok" once the visit finished, "failed" when it did not,
	// and StepStopped when a spent budget stopped it mid-turn. A tool that
	// exited non-zero finished: Outcome says how.
	Status     string `json:"status"`
	StartedAt  string `json:"started_at,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	// Detail is one line of the visit's output, at most StepDetailBytes:
	// an agent's reply, a human's answer, a tool's last line of stderr
	// (of stdout when stderr is empty; its last few lines, joined by
	// " ⏎ ", when it exited non-zero or timed out), or the error of a
	// visit that failed.
	Detail string `json:"detail,omitempty"`
	// Outcome is one of OutcomeOK, OutcomeExited, OutcomeTimedOut or
	// OutcomeFailed.
	Outcome string `json:"outcome,omitempty"`
	// Usage is what this visit alone cost, every round of an agent that
	// asked the user included; zero when the node is no agent or its CLI
	// reported nothing.
	Usage agent.Usage `json:"usage,omitzero"`
	// ExitCode is a tool visit's exit code when it was not 0 (-1 when the
	// tool timed out); TimedOut says it ran past its timeout and was
	// killed. A tool step with OutcomeOK exited 0.
	ExitCode int  `json:"exit_code,omitempty"`
	TimedOut bool `json:"timed_out,omitempty"`
	// Guidance are the notes the visit took, after its prompt.
	Guidance []Guidance `json:"guidance,omitempty"`
}

// StoppedVisit is an agent visit a spent budget stopped mid-turn.
type StoppedVisit struct {
	Node  string `json:"node"`
	Visit int    `json:"visit"`
	// Reason names the budget and what it had counted: "the budget of
	// node writer is spent: 1200 tokens used, max_tokens is 1000".
	Reason string `json:"reason"`
}

// Guidance is a note a person sent an agent node for its next visit.
type Guidance struct {
	Node string `json:"node"`
	Text string `json:"text"`
	By   string `json:"by,omitempty"`
	// At is when the run received it (RFC 3339, the workflow's clock).
	At string `json:"at,omitempty"`
}

// Step outcomes.
const (
	// OutcomeOK: the visit finished (a tool exited 0).
	OutcomeOK = "ok"
	// OutcomeExited: a tool exited with a code other than 0.
	OutcomeExited = "exited"
	// OutcomeTimedOut: a tool ran past its timeout and was killed.
	OutcomeTimedOut = "timed_out"
	// OutcomeFailed: the visit did not finish; Detail says why.
	OutcomeFailed = "failed"
	// OutcomeBudget: a spent budget stopped the agent visit mid-turn
	// (its step's Status is StatusStopped); Detail says which budget. A
	// resume continues the visit.
	OutcomeBudget = "budget"
)

// StepStopped is the Status of a step a spent budget stopped mid-turn.
const StepStopped = "stopped"

// StepDetailBytes bounds Step.Detail.
const StepDetailBytes = 300

// Transition is an edge a run took.
type Transition struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Lineage records where a run's state came from.
type Lineage struct {
	Run  string `json:"run"`
	Seq  int64  `json:"seq"`
	Kind string `json:"kind"` // "fork", "rewind", "resume"
	// At is a rewind's own checkpoint, the copy of Seq it wrote: the
	// checkpoints between Seq and At are the ones it dropped (rewind.go).
	// Rewinds written before At existed leave it 0.
	At int64 `json:"at,omitempty"`
}

// Encode serialises a checkpoint, stamping the current format version.
func Encode(cp *Checkpoint) ([]byte, error) {
	c := *cp
	c.Version = FormatVersion
	return json.Marshal(&c)
}

// Decode parses a checkpoint and refuses any format version but ours.
func Decode(b []byte) (*Checkpoint, error) {
	var probe struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("runstore: decode checkpoint: %w", err)
	}
	if probe.Version != FormatVersion {
		return nil, fmt.Errorf("%w: got %d, this build reads %d; use a matching tether release", ErrUnknownVersion, probe.Version, FormatVersion)
	}
	var cp Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("runstore: decode checkpoint: %w", err)
	}
	if g := bytes.TrimSpace(cp.Graph); len(g) > 0 && g[0] != '{' && string(g) != "null" {
		return nil, fmt.Errorf("%w: its graph is %.20s, not a JSON object", ErrInvalidCheckpoint, g)
	}
	if err := cp.Workspace.Validate(); err != nil {
		return nil, err
	}
	if err := cp.GitHub.Validate(); err != nil {
		return nil, err
	}
	for _, list := range [][]BranchState{cp.Branches, cp.Joined} {
		for i := range list {
			if err := list[i].validate(); err != nil {
				return nil, err
			}
		}
	}
	return &cp, nil
}

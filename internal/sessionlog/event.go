package sessionlog

// FormatVersion is the version of the header and event encoding this build
// writes and the only one it reads.
const FormatVersion = 1

// Header identifies a session. It is written once, with the first batch of
// events, and never changes: there is no mutable summary.
type Header struct {
	ID string `json:"id"`
	// Cwd is the working directory the session belongs to. Empty means the
	// definite "no cwd" scope, not "any cwd".
	Cwd     string `json:"cwd,omitempty"`
	Backend string `json:"backend"`
	// FormatVersion is filled in by Create when zero.
	FormatVersion int      `json:"format_version"`
	ForkedFrom    *Lineage `json:"forked_from,omitempty"`
}

// Lineage records where a forked session came from.
type Lineage struct {
	SessionID string `json:"session_id"`
	// Seq is the last sequence number of the parent that the fork copied.
	Seq int64 `json:"seq"`
}

func (h Header) equal(o Header) bool {
	if h.ID != o.ID || h.Cwd != o.Cwd || h.Backend != o.Backend || h.FormatVersion != o.FormatVersion {
		return false
	}
	if (h.ForkedFrom == nil) != (o.ForkedFrom == nil) {
		return false
	}
	return h.ForkedFrom == nil || *h.ForkedFrom == *o.ForkedFrom
}

// Kind names an event type. The vocabulary is closed: Append refuses others.
type Kind string

// The event vocabulary.
const (
	KindTurnStart  Kind = "turn/start"
	KindTurnEnd    Kind = "turn/end"
	KindStepStart  Kind = "step/start"
	KindStepEnd    Kind = "step/end"
	KindMessage    Kind = "message"
	KindToolCall   Kind = "tool/call"
	KindToolResult Kind = "tool/result"
)

// Role says who wrote a message.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
)

// Reason says why a turn ended. Kind is open-ended so that backends can add
// their own reasons; the ones below are the ones Tether itself writes.
type Reason struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

// Turn end reasons.
const (
	ReasonCompleted     = "completed"
	ReasonInterrupted   = "interrupted"
	ReasonFailed        = "failed"
	ReasonAwaitingInput = "awaiting_input"
)

// Event is one record of a session log. Which fields are meaningful depends
// on Kind; the constructors below set exactly those.
type Event struct {
	// Seq is assigned by Append: 1 for the first event, then contiguous.
	// Callers leave it zero (or set exactly the next number).
	Seq  int64 `json:"seq"`
	Kind Kind  `json:"kind"`
	// Reason is required on turn/end.
	Reason *Reason `json:"reason,omitempty"`
	// Role and Text carry a message.
	Role Role   `json:"role,omitempty"`
	Text string `json:"text,omitempty"`
	// ToolUseID pairs a tool call with its result; Tool and Input describe
	// the call, Output and IsError the result.
	ToolUseID string `json:"tool_use_id,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Input     any    `json:"input,omitempty"`
	Output    any    `json:"output,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	// Meta is free-form detail any event may carry.
	Meta map[string]any `json:"meta,omitempty"`
}

// TurnStart opens a turn.
func TurnStart() Event { return Event{Kind: KindTurnStart} }

// TurnEnd closes the open turn.
func TurnEnd(kind, detail string) Event {
	return Event{Kind: KindTurnEnd, Reason: &Reason{Kind: kind, Detail: detail}}
}

// StepStart opens a step inside the open turn.
func StepStart() Event { return Event{Kind: KindStepStart} }

// StepEnd closes the open step.
func StepEnd() Event { return Event{Kind: KindStepEnd} }

// Message records text from role.
func Message(role Role, text string) Event { return Event{Kind: KindMessage, Role: role, Text: text} }

// ToolCall records a request to run tool.
func ToolCall(id, tool string, input any) Event {
	return Event{Kind: KindToolCall, ToolUseID: id, Tool: tool, Input: input}
}

// ToolResult records the outcome of the tool call with the same id.
func ToolResult(id string, output any, isError bool) Event {
	return Event{Kind: KindToolResult, ToolUseID: id, Output: output, IsError: isError}
}

// Log is a loaded session: its header and every event, balanced (no turn or
// step left open by a crash). A log from LoadTail holds only the events
// from the last turn/start on; the first one's Seq says how many precede.
type Log struct {
	Header Header
	Events []Event
}

// LastSeq is the sequence number of the last event, 0 for an empty log.
func (l *Log) LastSeq() int64 {
	if len(l.Events) == 0 {
		return 0
	}
	return l.Events[len(l.Events)-1].Seq
}

// Package transcript is the shape of an agent's conversation as Tether
// shows it: a flat, paged list of entries (user prompts, assistant text,
// tool calls with their arguments, tool results, and notes about what
// could not be read), whatever CLI wrote the session.
//
// Each persist backend reads its own session file into this shape, in a
// leaf package beside its layout (internal/backend/<name>/session), with
// a Writer that does the common work once: it numbers turns, cuts long
// texts, keeps only the page asked for, and tells the reader when to
// stop. internal/conversation finds the file in a node's session blobs
// and runs the backend's reader.
//
// A session file is untrusted input (an agent wrote it): a reader never
// panics on it, skips a line it cannot parse with a note, and reads at
// most Limits of it.
package transcript

import (
	"context"
	"io"
	"unicode/utf8"

	"github.com/tether-run/tether/internal/treepolicy"
)

// Kind says what an entry is.
type Kind string

// The kinds of entries.
const (
	// User is a prompt or an answer the user gave the agent.
	User Kind = "user"
	// Assistant is text the model wrote.
	Assistant Kind = "assistant"
	// ToolCall is the model asking for a tool, with its arguments.
	ToolCall Kind = "tool_call"
	// ToolResult is what a tool returned to the model.
	ToolResult Kind = "tool_result"
	// Note is Tether's own remark about the session: a line that could not
	// be read, a session cut at the size limit.
	Note Kind = "note"
)

// Entry is one item of a conversation.
type Entry struct {
	Kind Kind `json:"kind"`
	// Turn is the number of the user turn the entry belongs to, from 1;
	// 0 for what comes before the first prompt.
	Turn int `json:"turn"`
	// Text is the prompt, the model's text, a tool's result or the note.
	Text string `json:"text,omitempty"`
	// Tool names the tool of a call or a result (when the session says).
	Tool string `json:"tool,omitempty"`
	// CallID pairs a tool call with its result.
	CallID string `json:"call_id,omitempty"`
	// Input is a tool call's arguments, as the session holds them
	// (usually JSON).
	Input string `json:"input,omitempty"`
	// IsError marks a tool result the tool reported as failed.
	IsError bool `json:"is_error,omitempty"`
	// Truncated marks an entry whose Text or Input was cut at
	// Limits.MaxTextBytes.
	Truncated bool `json:"truncated,omitempty"`
}

// Page is part of a conversation: the entries from From on.
type Page struct {
	Entries []Entry `json:"entries"`
	// From is the index of the first entry, counted from 0 over the whole
	// conversation.
	From int `json:"from"`
	// Next is the From of the next page, 0 when there is none.
	Next int `json:"next"`
	// Cut reports that the session file is longer than
	// Limits.MaxSessionBytes: what lies beyond was not read.
	Cut bool `json:"cut,omitempty"`
	// Backend and SessionID name the session the page is from.
	Backend   string `json:"backend"`
	SessionID string `json:"session_id"`
}

// Limits bound what reading one conversation costs; a zero field is its
// default (DefaultLimits).
type Limits struct {
	// MaxBlobBytes caps each session blob read from the store (compressed).
	MaxBlobBytes int64
	// MaxSessionBytes caps the bytes of the session file read; the rest is
	// not shown (Page.Cut).
	MaxSessionBytes int64
	// MaxLineBytes caps one line of a line-oriented session file; a longer
	// line is skipped with a note.
	MaxLineBytes int
	// MaxTextBytes caps an entry's Text and Input (Entry.Truncated).
	MaxTextBytes int
	// MaxPage caps the entries of one page.
	MaxPage int
}

// DefaultLimits: a blob of at most 64 MiB, 256 MiB of session read, lines
// of at most 16 MiB, 64 KiB of text per entry, 500 entries a page.
func DefaultLimits() Limits {
	return Limits{MaxBlobBytes: 64 << 20, MaxSessionBytes: 256 << 20, MaxLineBytes: 16 << 20, MaxTextBytes: 64 << 10, MaxPage: 500}
}

// Or fills the zero fields of l from d.
func (l Limits) Or(d Limits) Limits {
	l.MaxBlobBytes = treepolicy.OrDefault(l.MaxBlobBytes, d.MaxBlobBytes)
	l.MaxSessionBytes = treepolicy.OrDefault(l.MaxSessionBytes, d.MaxSessionBytes)
	l.MaxLineBytes = treepolicy.OrDefault(l.MaxLineBytes, d.MaxLineBytes)
	l.MaxTextBytes = treepolicy.OrDefault(l.MaxTextBytes, d.MaxTextBytes)
	l.MaxPage = treepolicy.OrDefault(l.MaxPage, d.MaxPage)
	return l
}

// Reader is one backend's knowledge of its conversation: which file of a
// session archive holds it, and how to read that file.
type Reader struct {
	// File reports whether the archive entry name (slash-separated, as the
	// backend's packer names it) is session id's conversation file.
	File func(name, id string) bool
	// Read reads the file from r into w, and returns when r is read, ctx
	// is done or w is Full. It fails only when nothing of r can be read
	// as this backend's session (a line it cannot parse is a note).
	Read func(ctx context.Context, r io.Reader, w *Writer) error
}

// Writer collects the entries a backend's reader finds, keeping the page
// asked for. Its zero value is not usable; see NewWriter.
type Writer struct {
	lim   Limits
	from  int
	n     int
	index int
	turn  int
	page  []Entry
	full  bool
	// tools names the tool of each call seen, for results that do not.
	tools map[string]string
}

// maxRemembered bounds the calls whose tool a writer remembers.
const maxRemembered = 1 << 16

// NewWriter returns a writer of the page of at most n entries (at most
// lim.MaxPage) from entry index from.
func NewWriter(from, n int, lim Limits) *Writer {
	lim = lim.Or(DefaultLimits())
	if n <= 0 || n > lim.MaxPage {
		n = lim.MaxPage
	}
	return &Writer{lim: lim, from: max(from, 0), n: n}
}

// Limits are the writer's limits, defaults filled.
func (w *Writer) Limits() Limits { return w.lim }

// Full reports that the page is complete and one more entry exists: the
// reader can stop.
func (w *Writer) Full() bool { return w.full }

// Turn is the number of the current user turn.
func (w *Writer) Turn() int { return w.turn }

// Add adds an entry of the current turn; a User entry opens the next turn.
func (w *Writer) Add(e Entry) {
	if w.full {
		return
	}
	switch {
	case e.Kind == User:
		w.turn++
	case e.Kind == ToolCall && e.CallID != "" && e.Tool != "" && len(w.tools) < maxRemembered:
		if w.tools == nil {
			w.tools = map[string]string{}
		}
		w.tools[e.CallID] = e.Tool
	case e.Kind == ToolResult && e.Tool == "":
		e.Tool = w.tools[e.CallID]
	}
	e.Turn = w.turn
	switch {
	case w.index < w.from:
	case len(w.page) < w.n:
		w.page = append(w.page, w.cut(e))
	default:
		w.full = true
		return
	}
	w.index++
}

// User adds a user prompt, which opens a turn.
func (w *Writer) User(text string) { w.Add(Entry{Kind: User, Text: text}) }

// Assistant adds text the model wrote; empty text is left out.
func (w *Writer) Assistant(text string) {
	if text != "" {
		w.Add(Entry{Kind: Assistant, Text: text})
	}
}

// Call adds a tool call.
func (w *Writer) Call(tool, callID, input string) {
	w.Add(Entry{Kind: ToolCall, Tool: tool, CallID: callID, Input: input})
}

// Result adds a tool's result; an empty tool is the one its call named.
func (w *Writer) Result(tool, callID, text string, isError bool) {
	w.Add(Entry{Kind: ToolResult, Tool: tool, CallID: callID, Text: text, IsError: isError})
}

// Note adds Tether's own remark.
func (w *Writer) Note(text string) { w.Add(Entry{Kind: Note, Text: text}) }

// Page returns the page collected so far.
func (w *Writer) Page() Page {
	p := Page{Entries: w.page, From: w.from}
	if p.Entries == nil {
		p.Entries = []Entry{}
	}
	if w.full {
		p.Next = w.from + len(w.page)
	}
	return p
}

// cut shortens e's Text and Input to MaxTextBytes, on a rune boundary.
func (w *Writer) cut(e Entry) Entry {
	var t1, t2 bool
	e.Text, t1 = cutText(e.Text, w.lim.MaxTextBytes)
	e.Input, t2 = cutText(e.Input, w.lim.MaxTextBytes)
	e.Truncated = e.Truncated || t1 || t2
	return e
}

func cutText(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

package console

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/tether-run/tether/internal/blobref"
	"github.com/tether-run/tether/internal/catalogue/transcripts"
	"github.com/tether-run/tether/internal/conversation"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/transcript"
)

// entriesPerPage is how many entries of a conversation one page shows.
const entriesPerPage = 100

// foldAt is the size beyond which a tool's result or arguments are
// folded (a <details> the reader opens).
const foldAt = 600

type conversationView struct {
	Entries []entryView
	// Prompt is the visit's own prompt, as the agent received it: the
	// conversation's last user turn (when it is on this page).
	Prompt    string
	Backend   string
	SessionID string
	From      int
	PrevURL   string
	NextURL   string
	Cut       bool
	// Note says why there is no conversation to show, or what is missing.
	Note string
}

type entryView struct {
	transcript.Entry
	Fold bool
}

// conversation reads one page of node's conversation as the checkpoint
// after its visit names it: the node's session slot (a persist node), or
// the pause blob of a visit that asked the user and waits. The blobs are
// read capped and digest-checked, and the session parsed as untrusted
// input (internal/conversation).
func (s *Server) conversation(ctx context.Context, run, node string, visit int, cp *runstore.Checkpoint, q url.Values) *conversationView {
	cv := &conversationView{}
	def, _ := runapi.GraphOrEmpty(cp).Node(node)
	var src conversation.Source
	switch slot, ok := cp.NodeSessions[node]; {
	case ok && slot.StateRef != "":
		src = conversation.FromSlot(s.blobs, run, slot)
	case cp.Pause != nil && cp.Pause.NodeID == node && cp.Pause.BackendSessionStateRef != "":
		src = conversation.FromPause(s.blobs, run, *cp.Pause)
	case def != nil && def.Session != graph.SessionPersist:
		cv.Note = fmt.Sprintf("Node %s runs with session: %s, so Tether keeps no conversation of its visits; its output is above.", node, def.Session)
		return cv
	default:
		cv.Note = "The checkpoint after this visit names no session of the node: its session could not be stored, so the next visit started fresh."
		return cv
	}
	cv.Backend, cv.SessionID = src.Backend, src.SessionID
	from := max(0, atoiDefault(q.Get("from"), 0))
	pg, err := conversation.Read(ctx, transcripts.Reader, src, from, entriesPerPage, transcript.Limits{})
	switch {
	case errors.Is(err, conversation.ErrGone):
		cv.Note = fmt.Sprintf("The session blob of this visit is gone from the store: a run keeps a node's latest sessions only (the later visits' pages show the conversation up to them). (%s)", blobref.Hide(err.Error()))
		return cv
	case errors.Is(err, conversation.ErrNoReader):
		cv.Note = fmt.Sprintf("This build has no reader for %s sessions. (%s)", src.Backend, blobref.Hide(err.Error()))
		return cv
	case err != nil:
		cv.Note = "The conversation could not be read: " + blobref.Hide(err.Error())
		return cv
	}
	cv.From, cv.Cut = pg.From, pg.Cut
	base := visitURL(run, node, visit)
	if from > 0 {
		cv.PrevURL = fmt.Sprintf("%s?from=%d#conversation", base, max(0, from-entriesPerPage))
	}
	if pg.Next > 0 {
		cv.NextURL = fmt.Sprintf("%s?from=%d#conversation", base, pg.Next)
	}
	last := -1
	for i, e := range pg.Entries {
		ev := entryView{Entry: e}
		switch e.Kind {
		case transcript.ToolResult:
			ev.Fold = len(e.Text) > foldAt || strings.Count(e.Text, "\n") > 12
		case transcript.ToolCall:
			ev.Fold = len(e.Input) > foldAt
		case transcript.User:
			last = i
		}
		cv.Entries = append(cv.Entries, ev)
	}
	if last >= 0 && pg.Next == 0 {
		cv.Prompt = pg.Entries[last].Text
	}
	return cv
}

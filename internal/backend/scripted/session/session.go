// Package session is where the scripted agent's conversation lies in a
// session archive, and how to read it as a transcript. It links no
// executor: the console reads conversations with it, and the scripted
// backend's packer names its archive entry with it.
package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/transcript"
)

// ArchiveName is the archive entry of session id's log: its one file,
// without the bucket that spells the working directory of the machine
// it was created on.
func ArchiveName(id string) string { return "log/" + id + ".jsonl" }

// Transcript reads a scripted session's log.
var Transcript = transcript.Reader{
	File: func(name, id string) bool { return name == ArchiveName(id) },
	Read: read,
}

// read reads the session log's JSONL: the header line, then one event a
// line (internal/sessionlog).
func read(ctx context.Context, r io.Reader, w *transcript.Writer) error {
	first := true
	return transcript.Lines(ctx, r, w, func(line []byte) error {
		if first {
			first = false
			var h sessionlog.Header
			if err := json.Unmarshal(line, &h); err != nil || h.ID == "" {
				return fmt.Errorf("not a session log header: %v", err)
			}
			if h.ForkedFrom != nil {
				w.Note(fmt.Sprintf("forked from session %s after event %d", h.ForkedFrom.SessionID, h.ForkedFrom.Seq))
			}
			return nil
		}
		var e sessionlog.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		add(w, e)
		return nil
	})
}

func add(w *transcript.Writer, e sessionlog.Event) {
	switch e.Kind {
	case sessionlog.KindMessage:
		switch e.Role {
		case sessionlog.RoleUser:
			w.User(e.Text)
		case sessionlog.RoleAssistant:
			w.Assistant(e.Text)
		default:
			w.Note(string(e.Role) + ": " + e.Text)
		}
	case sessionlog.KindToolCall:
		w.Call(e.Tool, e.ToolUseID, jsonText(e.Input))
	case sessionlog.KindToolResult:
		w.Result(e.Tool, e.ToolUseID, jsonText(e.Output), e.IsError)
	case sessionlog.KindTurnEnd:
		if e.Reason != nil && e.Reason.Kind != sessionlog.ReasonCompleted {
			note := "the turn ended: " + e.Reason.Kind
			if e.Reason.Detail != "" {
				note += ": " + e.Reason.Detail
			}
			w.Note(note)
		}
	}
}

// jsonText is a tool's input or output as a person reads it.
func jsonText(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

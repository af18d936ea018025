// Package session is where pi's conversation lies (one flat JSONL file)
// and how to read it as a transcript. It links no executor: the console
// reads conversations with it, and the pi packer finds sessions with it.
package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/tether-run/tether/internal/transcript"
)

var sessionStamp = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{3}Z_`)

// IsFile reports whether name is pi's file name for session id:
// <ISO timestamp with ':' and '.' as '-'>_<id>.jsonl, the same in an
// archive.
func IsFile(name, id string) bool {
	loc := sessionStamp.FindStringIndex(name)
	return loc != nil && name[loc[1]:] == id+".jsonl"
}

// Transcript reads pi sessions.
var Transcript = transcript.Reader{File: IsFile, Read: read}

// entry is one line of a pi session: the header, model and thinking
// changes, compactions, and the messages.
type entry struct {
	Type    string `json:"type"`
	Summary string `json:"summary"`
	Message struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		IsError    bool            `json:"isError"`
	} `json:"message"`
}

type part struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func read(ctx context.Context, r io.Reader, w *transcript.Writer) error {
	return transcript.Lines(ctx, r, w, func(b []byte) error {
		var e entry
		if err := json.Unmarshal(b, &e); err != nil {
			return err
		}
		switch e.Type {
		case "compaction":
			w.Note("summary of what came before: " + e.Summary)
		case "message":
			return message(w, e)
		}
		return nil
	})
}

func message(w *transcript.Writer, e entry) error {
	m := e.Message
	if m.Role == "toolResult" {
		w.Result(m.ToolName, m.ToolCallID, transcript.BlocksText(m.Content), m.IsError)
		return nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		m.Content, _ = json.Marshal([]part{{Type: "text", Text: s}})
	}
	var parts []part
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return fmt.Errorf("%s message: %v", m.Role, err)
	}
	var texts []string
	for _, p := range parts {
		switch {
		case p.Type == "text" && m.Role == "user":
			texts = append(texts, p.Text)
		case p.Type == "text":
			w.Assistant(p.Text)
		case p.Type == "toolCall":
			w.Call(p.Name, p.ID, transcript.RawText(p.Arguments))
		}
	}
	if len(texts) > 0 {
		w.User(strings.Join(texts, "\n"))
	}
	return nil
}

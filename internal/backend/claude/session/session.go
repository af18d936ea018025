// Package session is where Claude Code's conversation lies in a session
// archive, and how to read it as a transcript. It links no executor: the
// console reads conversations with it, and the claude_code packer names
// its archive entries with it.
package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tether-run/tether/internal/transcript"
)

// Names of a session's parts in an archive: its transcript (the main
// file), the folder of its subagents and tool results, and its task
// list. They carry no project slug, so that an archive unpacks under any
// working directory.
func TranscriptName(id string) string { return "project/" + id + ".jsonl" }

// FolderName is the archive name of session id's folder of subagent
// transcripts and tool results.
func FolderName(id string) string { return "project/" + id }

// TasksName is the archive name of session id's task list folder.
func TasksName(id string) string { return "tasks/" + id }

// Transcript reads Claude Code sessions.
var Transcript = transcript.Reader{
	File: func(name, id string) bool { return name == TranscriptName(id) },
	Read: read,
}

// line is one line of Claude Code's transcript: the messages of the main
// conversation and much else (attachments, API request records, cost
// state), which a person does not read.
type line struct {
	Type        string `json:"type"`
	IsSidechain bool   `json:"isSidechain"`
	IsMeta      bool   `json:"isMeta"`
	Summary     string `json:"summary"`
	Message     struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// block is one content block of a message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func read(ctx context.Context, r io.Reader, w *transcript.Writer) error {
	return transcript.Lines(ctx, r, w, func(b []byte) error {
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		switch {
		case l.IsSidechain || l.IsMeta:
			// A subagent's conversation and the CLI's own notes to the
			// model are not the conversation a person had.
		case l.Type == "summary" && l.Summary != "":
			w.Note("summary of what came before: " + l.Summary)
		case l.Type == "user", l.Type == "assistant":
			return message(w, l.Type, l.Message.Content)
		}
		return nil
	})
}

// message adds a message: a user's prompt (a string, or text blocks), the
// tool results a user message carries, or the assistant's text and tool
// calls.
func message(w *transcript.Writer, role string, content json.RawMessage) error {
	var s string
	if json.Unmarshal(content, &s) == nil {
		if role == "user" {
			w.User(s)
		} else {
			w.Assistant(s)
		}
		return nil
	}
	var blocks []block
	if err := json.Unmarshal(content, &blocks); err != nil {
		return fmt.Errorf("%s message: %v", role, err)
	}
	var prompt []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if role == "user" {
				prompt = append(prompt, b.Text)
			} else {
				w.Assistant(b.Text)
			}
		case "tool_use":
			w.Call(b.Name, b.ID, transcript.RawText(b.Input))
		case "tool_result":
			w.Result("", b.ToolUseID, transcript.BlocksText(b.Content), b.IsError)
		}
	}
	if len(prompt) > 0 {
		w.User(strings.Join(prompt, "\n"))
	}
	return nil
}

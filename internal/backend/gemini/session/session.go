// Package session is where Gemini CLI's conversation lies (one JSONL file
// in the pinned project's chats directory) and how to read it as a
// transcript. It links no executor: the console reads conversations with
// it, and the gemini packer finds sessions with it.
package session

import (
	"context"
	"encoding/json"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/tether-run/tether/internal/transcript"
)

// ProjectSlug is the name the executor gives every working directory in
// Gemini CLI's project registry, so that a session's directory does not
// depend on the machine or the working directory it was created in.
const ProjectSlug = "tether"

// ChatsDir is where Gemini CLI keeps the sessions of the pinned project,
// relative to the state root (GEMINI_CLI_HOME); the same in an archive.
const ChatsDir = ".gemini/tmp/" + ProjectSlug + "/chats"

var sessionName = regexp.MustCompile(`^session-[0-9][0-9T-]*-([A-Za-z0-9_-]{8})\.jsonl$`)

// IsFile reports whether name is Gemini CLI's file name for session id.
// The name holds only the id's first 8 characters, as Gemini CLI's own
// lookup does; the executor checks the full id inside.
func IsFile(name, id string) bool {
	m := sessionName.FindStringSubmatch(name)
	return m != nil && len(id) >= 8 && m[1] == id[:8]
}

// IsPath reports whether rel is ChatsDir/<session file of id>.
func IsPath(rel, id string) bool {
	dir, file := path.Split(rel)
	return strings.TrimSuffix(dir, "/") == ChatsDir && IsFile(file, id)
}

// Transcript reads Gemini CLI sessions.
var Transcript = transcript.Reader{File: IsPath, Read: read}

// record is one line of a session file: the metadata (first, and again at
// each resume), a "$set" of metadata or of the CLI's own replay list, or
// a message; a message the CLI updates (its tool calls added) comes again
// under the same id.
type record struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"toolCalls"`
}

type part struct {
	Text             *string `json:"text"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

func read(ctx context.Context, r io.Reader, w *transcript.Writer) error {
	// A message's last version is the one to show: it is held back until
	// a record of another message comes.
	var held *record
	flush := func() {
		if held != nil {
			message(w, *held)
			held = nil
		}
	}
	err := transcript.Lines(ctx, r, w, func(b []byte) error {
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			return err
		}
		if rec.ID == "" || rec.Type == "" {
			return nil // metadata, "$set"
		}
		if held != nil && held.ID != rec.ID {
			flush()
		}
		held = &rec
		return nil
	})
	flush()
	return err
}

func message(w *transcript.Writer, rec record) {
	switch rec.Type {
	case "user":
		var parts []part
		if json.Unmarshal(rec.Content, &parts) != nil {
			var s string
			if json.Unmarshal(rec.Content, &s) == nil {
				w.User(s)
			}
			return
		}
		var texts []string
		for _, p := range parts {
			switch {
			case p.FunctionResponse != nil:
				w.Result(p.FunctionResponse.Name, p.FunctionResponse.ID, response(p.FunctionResponse.Response), false)
			case p.Text != nil:
				texts = append(texts, *p.Text)
			}
		}
		if len(texts) > 0 {
			w.User(strings.Join(texts, "\n"))
		}
	case "gemini":
		w.Assistant(transcript.BlocksText(rec.Content))
		for _, c := range rec.ToolCalls {
			w.Call(c.Name, c.ID, transcript.RawText(c.Args))
		}
	case "info", "warning", "error":
		w.Note(rec.Type + ": " + transcript.BlocksText(rec.Content))
	}
}

// response is a function's response as a person reads it: its output or
// error, else the whole response.
func response(raw json.RawMessage) string {
	var r struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	if json.Unmarshal(raw, &r) == nil {
		if r.Output != nil {
			return *r.Output
		}
		if r.Error != nil {
			return *r.Error
		}
	}
	return transcript.RawText(raw)
}

// Package session is where opencode's conversation lies (the session's
// export, one JSON document) and how to read it as a transcript. It
// links no executor: the console reads conversations with it, and the
// opencode packer names its export with it.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/tether-run/tether/internal/transcript"
)

// Dir holds the sessions' exports, relative to the state root; the same
// in an archive. opencode keeps every session in one SQLite database, so
// the executor writes each session's own export (`opencode export ID`)
// here after each visit, and that file is the session Tether packs.
const Dir = "sessions"

// sessionID is what a session id may hold to name a file: opencode's are
// ses_ and 26 base62 characters.
// Its length is checked apart: a counted repetition costs a
// millisecond to compile at every start of tether and the worker.
var sessionID = regexp.MustCompile(`^[0-9A-Za-z_-]+$`)

// ExportName is the export's path for id.
func ExportName(id string) string { return Dir + "/" + id + ".json" }

// IsExport reports whether rel is session id's export.
func IsExport(rel, id string) bool {
	return len(id) <= 128 && sessionID.MatchString(id) && rel == ExportName(id)
}

// Transcript reads opencode exports.
var Transcript = transcript.Reader{File: IsExport, Read: read}

// message is one message of an export with its parts.
type message struct {
	Info struct {
		Role string `json:"role"`
	} `json:"info"`
	Parts []struct {
		Type  string `json:"type"`
		Text  string `json:"text"`
		Tool  string `json:"tool"`
		ID    string `json:"callID"`
		State struct {
			Status string          `json:"status"`
			Input  json.RawMessage `json:"input"`
			Output string          `json:"output"`
			Error  string          `json:"error"`
		} `json:"state"`
		Synthetic bool `json:"synthetic"`
	} `json:"parts"`
}

// read streams the export's "messages" array one message at a time, so a
// long session is never held whole; a message that does not decode is a
// note, and reading goes on with the next.
func read(ctx context.Context, r io.Reader, w *transcript.Writer) error {
	dec := json.NewDecoder(r)
	if err := expect(dec, json.Delim('{')); err != nil {
		return err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return fmt.Errorf("opencode export: %w", err)
		}
		if key != "messages" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fmt.Errorf("opencode export: %v: %w", key, err)
			}
			continue
		}
		if err := expect(dec, json.Delim('[')); err != nil {
			return err
		}
		for n := 1; dec.More() && !w.Full(); n++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fmt.Errorf("opencode export: message %d: %w", n, err)
			}
			var m message
			if err := json.Unmarshal(raw, &m); err != nil {
				w.Note(fmt.Sprintf("message %d skipped: %v", n, err))
				continue
			}
			add(w, m)
		}
		return nil
	}
	return nil
}

func expect(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("opencode export: %w", err)
	}
	if tok != want {
		return errors.New("opencode export: not an export (want " + want.String() + ")")
	}
	return nil
}

func add(w *transcript.Writer, m message) {
	var prompt []string
	for _, p := range m.Parts {
		switch {
		case p.Type == "text" && m.Info.Role == "user" && !p.Synthetic:
			prompt = append(prompt, p.Text)
		case p.Type == "text" && m.Info.Role == "assistant":
			w.Assistant(p.Text)
		case p.Type == "tool":
			w.Call(p.Tool, p.ID, transcript.RawText(p.State.Input))
			switch p.State.Status {
			case "completed":
				w.Result(p.Tool, p.ID, p.State.Output, false)
			case "error":
				w.Result(p.Tool, p.ID, p.State.Error, true)
			}
		}
	}
	if len(prompt) > 0 {
		w.User(strings.Join(prompt, "\n"))
	}
}

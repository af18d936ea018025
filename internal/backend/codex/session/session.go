// Package session is where Codex's conversation lies (its rollout file)
// and how to read it as a transcript. It links no executor: the console
// reads conversations with it, and the codex packer finds rollouts with
// it.
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

var (
	yearDir      = regexp.MustCompile(`^[0-9]{4}$`)
	monthDayDir  = regexp.MustCompile(`^[0-9]{2}$`)
	rolloutStamp = regexp.MustCompile(`^rollout-[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}-`)
)

// YearDir and MonthDayDir report whether a folder name is a rollout's
// year, or its month or day.
func YearDir(name string) bool     { return yearDir.MatchString(name) }
func MonthDayDir(name string) bool { return monthDayDir.MatchString(name) }

// IsRollout reports whether file is the rollout file name of session id.
func IsRollout(file, id string) bool {
	loc := rolloutStamp.FindStringIndex(file)
	return loc != nil && file[loc[1]:] == id+".jsonl"
}

// IsRolloutPath reports whether rel (slash-separated, below CODEX_HOME;
// the same in an archive) is sessions/YYYY/MM/DD/<rollout of id>.
func IsRolloutPath(rel, id string) bool {
	c := strings.Split(rel, "/")
	return len(c) == 5 && c[0] == "sessions" && YearDir(c[1]) &&
		MonthDayDir(c[2]) && MonthDayDir(c[3]) && IsRollout(c[4], id)
}

// Transcript reads Codex rollouts.
var Transcript = transcript.Reader{File: IsRolloutPath, Read: read}

// record is one line of a rollout; the conversation is in its
// response_item records.
type record struct {
	Type    string `json:"type"`
	Payload struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Name      string          `json:"name"`
		Namespace string          `json:"namespace"`
		Arguments string          `json:"arguments"`
		Input     string          `json:"input"`
		CallID    string          `json:"call_id"`
		Output    json.RawMessage `json:"output"`
		Action    json.RawMessage `json:"action"`
		Message   string          `json:"message"`
	} `json:"payload"`
}

func read(ctx context.Context, r io.Reader, w *transcript.Writer) error {
	return transcript.Lines(ctx, r, w, func(b []byte) error {
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			return err
		}
		p := rec.Payload
		switch {
		case rec.Type == "compacted":
			w.Note("the conversation before this point was compacted")
		case rec.Type != "response_item":
		case p.Type == "message":
			return message(w, p.Role, p.Content)
		case p.Type == "function_call":
			name := p.Name
			if p.Namespace != "" {
				name = p.Namespace + "." + p.Name
			}
			w.Call(name, p.CallID, p.Arguments)
		case p.Type == "custom_tool_call":
			w.Call(p.Name, p.CallID, p.Input)
		case p.Type == "local_shell_call":
			w.Call("shell", p.CallID, transcript.RawText(p.Action))
		case p.Type == "function_call_output", p.Type == "custom_tool_call_output", p.Type == "local_shell_call_output":
			w.Result("", p.CallID, output(p.Output), false)
		}
		return nil
	})
}

// output is a tool's output: a string, or an object with its text.
func output(raw json.RawMessage) string {
	var o struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Content != nil {
		return *o.Content
	}
	return transcript.BlocksText(raw)
}

// message adds a user's or the assistant's message. The user messages
// Codex writes itself (the environment, AGENTS.md, permissions) and the
// developer's instructions are not the conversation a person had.
func message(w *transcript.Writer, role string, content json.RawMessage) error {
	var items []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(content, &items); err != nil {
		return fmt.Errorf("%s message: %v", role, err)
	}
	var texts []string
	for _, it := range items {
		if it.Text != "" && !injected(it.Text) {
			texts = append(texts, it.Text)
		}
	}
	if len(texts) == 0 {
		return nil
	}
	text := strings.Join(texts, "\n")
	switch role {
	case "user":
		w.User(text)
	case "assistant":
		w.Assistant(text)
	}
	return nil
}

// injected reports whether a user message's text is one Codex adds
// itself: a tagged block (<environment_context>…) or the AGENTS.md
// instructions.
func injected(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "# AGENTS.md instructions") ||
		strings.HasPrefix(t, "<") && strings.HasSuffix(t, ">") && strings.Index(t, ">") < 64
}

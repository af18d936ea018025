package cliexec

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/tether-run/tether/internal/backend"
)

// Structured parses an agent's final text as structured output: the whole
// text, or the only fenced code block in it, must be a JSON object.
// Anything else is plain text and yields nil.
func Structured(text string) map[string]any {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "```") && strings.HasSuffix(t, "```") && len(t) >= 6 {
		t = strings.TrimSuffix(strings.TrimPrefix(t, "```"), "```")
		if i := strings.IndexByte(t, '\n'); i >= 0 && !strings.HasPrefix(strings.TrimSpace(t[:i]), "{") {
			t = t[i+1:] // language tag
		}
		t = strings.TrimSpace(t)
	}
	if !strings.HasPrefix(t, "{") {
		return nil
	}
	var m map[string]any
	if json.Unmarshal([]byte(t), &m) != nil {
		return nil
	}
	return m
}

// AnswerPrompt is the prompt that resumes a session that asked the user: the
// pending ask_user tool call was already closed by its own result (which
// told the model the answer comes next), so the answer is simply the next
// user message.
func AnswerPrompt(a *backend.Answer) string {
	var b strings.Builder
	b.WriteString("The user answered your ask_user question")
	if a.PendingToolUseID != "" {
		fmt.Fprintf(&b, " (tool use %s)", a.PendingToolUseID)
	}
	if a.QuestionID != "" {
		fmt.Fprintf(&b, " %s", a.QuestionID)
	}
	b.WriteString(":\n")
	b.WriteString(a.Text)
	return b.String()
}

// Prompt is the text a visit sends: the answer when the visit resumes a
// question, else the request's prompt.
func Prompt(req backend.Request) (string, error) {
	if req.Answer == nil {
		return req.Prompt, nil
	}
	if req.SessionID == "" {
		return "", fmt.Errorf("an answer needs the session that asked (request has Answer but no SessionID)")
	}
	return AnswerPrompt(req.Answer), nil
}

// Environ returns the worker's environment without the variables named in
// drop (exact names, or prefixes ending in "*"), followed by set. It is the
// base of every CLI's environment: the CLI keeps PATH, HOME and the like,
// and never sees another value of a variable the executor sets.
func Environ(drop []string, set ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if dropped(name, drop) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, set...)
}

func dropped(name string, drop []string) bool {
	for _, d := range drop {
		if p, ok := strings.CutSuffix(d, "*"); ok {
			if strings.HasPrefix(name, p) {
				return true
			}
		} else if name == d {
			return true
		}
	}
	return false
}

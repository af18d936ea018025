package cliexec

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
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
func AnswerPrompt(a *agent.Answer) string {
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
func Prompt(req agent.Request) (string, error) {
	if req.Answer == nil {
		return req.Prompt, nil
	}
	if req.SessionID == "" {
		return "", fmt.Errorf("an answer needs the session that asked (request has Answer but no SessionID)")
	}
	return AnswerPrompt(req.Answer), nil
}

// BaseEnv names the worker environment variables every CLI and tool
// process gets: what a program needs to run at all (a name ending in "*" is a
// prefix). Everything else of the worker's environment, its secrets
// included, reaches a process only when named: by the executor itself, by a
// node's env, or by the worker's TETHER_PASS_ENV.
var BaseEnv = []string{
	"PATH", "HOME", "USER", "LANG", "LC_*", "TZ", "TMPDIR", "TERM", "SHELL",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
}

// NeverPass names worker variables no CLI or tool process gets, whatever
// names them (a node's env, TETHER_PASS_ENV, a prefix such as TETHER_*):
// the forge's credentials, which only the worker's own activities use
// (internal/github/forge).
var NeverPass = []string{"TETHER_GITHUB_TOKEN", "TETHER_GITHUB_APP_KEY", "TETHER_GITHUB_WEBHOOK_SECRET"}

// Environ is the environment of a CLI or tool process: the worker's
// variables named by BaseEnv and by pass (never those of NeverPass, nor a
// model key: catalogue.KeyVars, which the worker's model relay holds,
// whatever pass names), then set (NAME=value entries), which always win:
// the process never sees the worker's value of a variable set names.
func Environ(pass []string, set ...string) []string {
	setNames := map[string]bool{}
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		setNames[name] = true
	}
	names := append(append([]string(nil), BaseEnv...), pass...)
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !setNames[name] && matches(name, names) && !matches(name, NeverPass) && !slices.Contains(keyVars, name) {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// keyVars are the names of the model keys, which no process gets by name.
var keyVars = catalogue.KeyVars()

// matches reports whether name is in names (exact names, or prefixes
// ending in "*").
func matches(name string, names []string) bool {
	for _, d := range names {
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

// The ask_user reply convention of the CLIs without a usable MCP client
// (pi, gemini, grok): a final reply whose last lines all start with
// AskUserPrefix, or a final JSON object with an AskUserKey, pauses the
// visit with those questions.
const (
	AskUserPrefix = "ASK_USER:"
	AskUserKey    = "ask_user"
)

// AskUserInstructions teach a model the reply convention; an executor
// that follows it adds them to the system prompt (AppendSystemPrompt).
const AskUserInstructions = "When you need information, a decision or an approval that only the human user can give, " +
	"end your reply with one line per question, each of the form `ASK_USER: <question>`, and write nothing after them. " +
	"The visit pauses; the user's answer arrives as the next user message."

// AppendSystemPrompt is what an executor appends to the system prompt: the
// node's appended prompt, else the executor's, followed by
// AskUserInstructions when the reply convention is on.
func AppendSystemPrompt(node, executor string, convention bool) string {
	var parts []string
	if a := Pick(node, executor); a != "" {
		parts = append(parts, a)
	}
	if convention {
		parts = append(parts, AskUserInstructions)
	}
	return strings.Join(parts, "\n\n")
}

// FinishReply sets res.Structured from the final reply and, when the
// reply convention is on and the reply asks, the questions in place of
// the structured output.
func FinishReply(res *agent.Result, convention bool) {
	res.Structured = Structured(res.Text)
	if !convention {
		return
	}
	if qs := AskedQuestions(res.Text, res.Structured); len(qs) > 0 {
		res.NeedsInteraction = &agent.Interaction{Questions: qs}
		res.Structured = nil
	}
}

// AskedQuestions applies the ask_user reply convention to a final reply:
// the structured form when structured is non-nil, else the trailing
// AskUserPrefix lines of text. Questions are numbered q1, q2, ….
func AskedQuestions(text string, structured map[string]any) []agent.Question {
	var qs []string
	if structured != nil {
		switch v := structured[AskUserKey].(type) {
		case string:
			qs = append(qs, v)
		case []any:
			for _, q := range v {
				if s, ok := q.(string); ok {
					qs = append(qs, s)
				}
			}
		}
	} else {
		lines := strings.Split(strings.TrimSpace(text), "\n")
		i := len(lines)
		for i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), AskUserPrefix) {
			i--
		}
		for _, l := range lines[i:] {
			qs = append(qs, strings.TrimPrefix(strings.TrimSpace(l), AskUserPrefix))
		}
	}
	var out []agent.Question
	for _, q := range qs {
		if q = strings.TrimSpace(q); q != "" {
			out = append(out, agent.Question{ID: fmt.Sprintf("q%d", len(out)+1), Text: q})
		}
	}
	return out
}

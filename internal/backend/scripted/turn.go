package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/sessionlog"
)

// DefaultReply is the reply template when the script is empty.
const DefaultReply = "turn {{.Turn}}: {{.Prompt}}"

// Cues a rendered reply may carry.
const (
	// CueFail at the start of a reply fails the visit with agent.ErrScript.
	CueFail = "FAIL:"
	// CueJSON at the start of a reply makes the rest the structured output.
	CueJSON = "JSON:"
	// CueAsk at the start of a line asks the user that line's question.
	CueAsk = "ASK:"
)

// Data is what a reply template sees.
type Data struct {
	// Turn is this turn's number in the session, from 1; resumes continue
	// the count.
	Turn int
	// Prompt is the user's message this turn (the answer, when resuming a
	// question).
	Prompt string
	// Visit is the node visit the runtime is executing.
	Visit int
	// SessionID is the session the turn runs in.
	SessionID string
	// History holds the earlier turns of the session, oldest first.
	History []Turn
}

// turn is one visit's turn in a session.
type turn struct {
	log     *sessionlog.Coordinator
	id      string
	number  int
	history []Turn
	prompt  string
}

// begin durably records the turn's opening before any reply exists, so a
// crash from here on leaves an open turn that repair closes as interrupted.
func (t *turn) begin(ctx context.Context, req agent.Request) error {
	opening := []sessionlog.Event{turnStart(t.number)}
	t.prompt = req.Prompt
	if req.Answer != nil {
		var last *Turn
		if len(t.history) > 0 {
			last = &t.history[len(t.history)-1]
		}
		if last == nil || last.End != sessionlog.ReasonAwaitingInput {
			return fmt.Errorf("scripted: session %s is not waiting for an answer; resume it without one", t.id)
		}
		a := req.Answer
		if a.PendingToolUseID != "" && a.PendingToolUseID != last.askID {
			return fmt.Errorf("scripted: session %s waits for an answer to %s, not %s", t.id, last.askID, a.PendingToolUseID)
		}
		if a.QuestionID != "" && !slices.Contains(last.questions, a.QuestionID) {
			return fmt.Errorf("scripted: session %s asked %v, not %s", t.id, last.questions, a.QuestionID)
		}
		opening = append(opening, sessionlog.ToolResult(last.askID, a.Text, false))
		t.prompt = a.Text
	}
	opening = append(opening, sessionlog.Message(sessionlog.RoleUser, t.prompt))
	if err := t.log.Append(ctx, t.id, opening...); err != nil {
		return fmt.Errorf("scripted: record turn %d of %s: %w", t.number, t.id, err)
	}
	return nil
}

// entry picks the script entry of this turn: entry n-1, the last entry
// once the script runs out, DefaultReply for an empty script.
func (t *turn) entry(script []string) (string, int) {
	switch {
	case len(script) == 0:
		return DefaultReply, 0
	case t.number <= len(script):
		return script[t.number-1], t.number - 1
	default:
		return script[len(script)-1], len(script) - 1
	}
}

// reply renders the script entry, acts on its cue and closes the turn.
func (t *turn) reply(ctx context.Context, req agent.Request) (agent.Result, error) {
	src, idx := t.entry(req.Script)
	text, err := render(src, Data{Turn: t.number, Prompt: t.prompt, Visit: req.Visit, SessionID: t.id, History: t.history})
	if err != nil {
		return t.fail(ctx, "", fmt.Sprintf("script entry %d: %v", idx, err))
	}
	trimmed := strings.TrimSpace(text)
	if err := applyFiles(req.Env.Workdir, text); err != nil {
		return t.fail(ctx, text, fmt.Sprintf("script entry %d: %v", idx, err))
	}
	if msg, ok := strings.CutPrefix(trimmed, CueFail); ok {
		return t.fail(ctx, text, strings.TrimSpace(msg))
	}
	if raw, ok := strings.CutPrefix(trimmed, CueJSON); ok {
		raw = strings.TrimSpace(raw)
		var obj map[string]any
		if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
			return t.fail(ctx, text, fmt.Sprintf("script entry %d: the JSON cue is not a JSON object: %s", idx, raw))
		}
		if err := t.end(ctx, sessionlog.ReasonCompleted, "", sessionlog.Message(sessionlog.RoleAssistant, raw)); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Text: raw, Structured: obj}, nil
	}
	if qs := questions(text); len(qs) > 0 {
		askID := fmt.Sprintf("ask-%d", t.number)
		err := t.end(ctx, sessionlog.ReasonAwaitingInput, "",
			sessionlog.Message(sessionlog.RoleAssistant, text),
			sessionlog.ToolCall(askID, askTool, askInput(qs)))
		if err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Text: text, NeedsInteraction: &agent.Interaction{Questions: qs, PendingToolUseID: askID}}, nil
	}
	if err := t.end(ctx, sessionlog.ReasonCompleted, "", sessionlog.Message(sessionlog.RoleAssistant, text)); err != nil {
		return agent.Result{}, err
	}
	return agent.Result{Text: text}, nil
}

// end appends the turn's closing events and its turn/end in one batch.
func (t *turn) end(ctx context.Context, reason, detail string, events ...sessionlog.Event) error {
	events = append(events, sessionlog.TurnEnd(reason, detail))
	if err := t.log.Append(ctx, t.id, events...); err != nil {
		return fmt.Errorf("scripted: record reply of turn %d of %s: %w", t.number, t.id, err)
	}
	return nil
}

// fail closes the turn as failed and returns the scripted failure.
func (t *turn) fail(ctx context.Context, text, msg string) (agent.Result, error) {
	var events []sessionlog.Event
	if text != "" {
		events = append(events, sessionlog.Message(sessionlog.RoleAssistant, text))
	}
	if err := t.end(ctx, sessionlog.ReasonFailed, msg, events...); err != nil {
		return agent.Result{}, err
	}
	return agent.Result{}, fmt.Errorf("%w: session %s turn %d: %s", agent.ErrScript, t.id, t.number, msg)
}

func render(src string, data Data) (string, error) {
	tmpl, err := template.New("reply").Option("missingkey=error").Parse(src)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// questions collects the ASK: lines of a reply as q1, q2, ...
func questions(text string) []agent.Question {
	var qs []agent.Question
	for line := range strings.Lines(text) {
		if q, ok := strings.CutPrefix(strings.TrimSpace(line), CueAsk); ok && strings.TrimSpace(q) != "" {
			qs = append(qs, agent.Question{ID: fmt.Sprintf("q%d", len(qs)+1), Text: strings.TrimSpace(q)})
		}
	}
	return qs
}

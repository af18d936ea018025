package scripted

import (
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/sessionlog"
)

// Turn is one earlier turn of a session, as reply templates see it.
type Turn struct {
	// Number counts turns in the session from 1.
	Number int
	// Prompt is what the user said: the visit's prompt, or the answer to a
	// question the previous turn asked.
	Prompt string
	// Reply is what the agent said ("" if the turn was interrupted before).
	Reply string
	// End is how the turn ended: completed, failed, awaiting_input, or
	// interrupted when a crash cut it short.
	End string

	askID     string
	questions []string
}

// history rebuilds the turns of a (balanced) log.
func history(events []sessionlog.Event) []Turn {
	var turns []Turn
	for _, e := range events {
		if e.Kind == sessionlog.KindTurnStart {
			turns = append(turns, Turn{Number: len(turns) + 1})
			continue
		}
		if len(turns) == 0 {
			continue
		}
		t := &turns[len(turns)-1]
		switch e.Kind {
		case sessionlog.KindMessage:
			switch e.Role {
			case sessionlog.RoleUser:
				t.Prompt = e.Text
			case sessionlog.RoleAssistant:
				t.Reply = e.Text
			}
		case sessionlog.KindToolCall:
			if e.Tool == askTool {
				t.askID = e.ToolUseID
				t.questions = questionIDs(e.Input)
			}
		case sessionlog.KindTurnEnd:
			t.End = e.Reason.Kind
		}
	}
	return turns
}

// askInput is what an ask_user tool call records.
func askInput(qs []agent.Question) map[string]any {
	list := make([]any, len(qs))
	for i, q := range qs {
		list[i] = map[string]any{"id": q.ID, "text": q.Text}
	}
	return map[string]any{"questions": list}
}

func questionIDs(input any) []string {
	m, _ := input.(map[string]any)
	list, _ := m["questions"].([]any)
	var ids []string
	for _, q := range list {
		if qm, ok := q.(map[string]any); ok {
			if id, ok := qm["id"].(string); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

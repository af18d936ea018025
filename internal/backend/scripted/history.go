package scripted

import (
	"strings"

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

// turnMeta is the turn/start meta key that holds the turn's number, so a
// resume can read the last turn alone and still count on.
const turnMeta = "turn"

// turnStart opens turn number n.
func turnStart(n int) sessionlog.Event {
	e := sessionlog.TurnStart()
	e.Meta = map[string]any{turnMeta: n}
	return e
}

// lastTurns rebuilds the turns of the end of a log that LoadTail returned,
// numbered as in the whole session. It reports false when the end begins
// after the first event at a turn/start that carries no number (a log
// written before turns were numbered), which only the whole log can count.
func lastTurns(events []sessionlog.Event) ([]Turn, bool) {
	if len(events) == 0 || events[0].Seq == 1 {
		return history(events), true
	}
	n, ok := events[0].Meta[turnMeta].(float64)
	if !ok || n < 1 || n != float64(int(n)) {
		return nil, false
	}
	turns := history(events)
	for i := range turns {
		turns[i].Number = int(n) + i
	}
	return turns, true
}

// readsHistory reports whether any script entry may read Data.History:
// one that names it anywhere, conservatively.
func readsHistory(script []string) bool {
	for _, s := range script {
		if strings.Contains(s, "History") {
			return true
		}
	}
	return false
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

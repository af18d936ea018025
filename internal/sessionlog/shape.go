package sessionlog

import "fmt"

// Shape is where a sequence of events leaves a session: the last sequence
// number and whether a turn or a step is still open.
type Shape struct {
	LastSeq  int64
	TurnOpen bool
	StepOpen bool
}

// Balanced reports whether no turn and no step is open.
func (s Shape) Balanced() bool { return !s.TurnOpen && !s.StepOpen }

// next checks that e may follow s and returns the resulting shape. Turns do
// not nest, steps live inside a turn, and a turn ends only after its step.
func (s Shape) next(e Event) (Shape, error) {
	if e.Seq != s.LastSeq+1 {
		return s, fmt.Errorf("seq %d follows %d", e.Seq, s.LastSeq)
	}
	switch e.Kind {
	case KindTurnStart:
		if s.TurnOpen {
			return s, fmt.Errorf("seq %d: turn/start while a turn is open", e.Seq)
		}
		s.TurnOpen = true
	case KindTurnEnd:
		if !s.TurnOpen {
			return s, fmt.Errorf("seq %d: turn/end without an open turn", e.Seq)
		}
		if s.StepOpen {
			return s, fmt.Errorf("seq %d: turn/end while a step is open", e.Seq)
		}
		if e.Reason == nil || e.Reason.Kind == "" {
			return s, fmt.Errorf("seq %d: turn/end without a reason", e.Seq)
		}
		s.TurnOpen = false
	case KindStepStart:
		if !s.TurnOpen || s.StepOpen {
			return s, fmt.Errorf("seq %d: step/start needs an open turn and no open step", e.Seq)
		}
		s.StepOpen = true
	case KindStepEnd:
		if !s.StepOpen {
			return s, fmt.Errorf("seq %d: step/end without an open step", e.Seq)
		}
		s.StepOpen = false
	case KindMessage:
		if e.Role == "" {
			return s, fmt.Errorf("seq %d: message without a role", e.Seq)
		}
	case KindToolCall, KindToolResult:
		if e.ToolUseID == "" {
			return s, fmt.Errorf("seq %d: %s without a tool_use_id", e.Seq, e.Kind)
		}
	default:
		return s, fmt.Errorf("seq %d: unknown event kind %q", e.Seq, e.Kind)
	}
	s.LastSeq = e.Seq
	return s, nil
}

// ShapeOf replays events from an empty session and reports where they leave
// it, or why they are not a valid log (seq gaps, unbalanced nesting, unknown
// kinds).
func ShapeOf(events []Event) (Shape, error) {
	return Shape{}.replay(events)
}

// replay checks that events may follow s and returns where they leave it.
func (s Shape) replay(events []Event) (Shape, error) {
	for _, e := range events {
		var err error
		if s, err = s.next(e); err != nil {
			return s, err
		}
	}
	return s, nil
}

// shapeOf replays events as a storage load returned them at depth. A
// LastTurn load may begin at a turn/start after the first event: a turn
// may start only when no turn is open, so the events before it left the
// session balanced, and the replay starts there.
func shapeOf(events []Event, depth Depth) (Shape, error) {
	if depth != LastTurn || len(events) == 0 || events[0].Seq == 1 {
		return ShapeOf(events)
	}
	first := events[0]
	if first.Kind != KindTurnStart || first.Seq < 1 {
		return Shape{}, fmt.Errorf("the last turn's events begin at seq %d, a %s, not a turn/start", first.Seq, first.Kind)
	}
	return Shape{LastSeq: first.Seq - 1}.replay(events)
}

// closers are the synthetic events that close what a crash left open: a step
// end if a step was open, then a turn end with reason interrupted.
func (s Shape) closers() []Event {
	var out []Event
	seq := s.LastSeq
	if s.StepOpen {
		seq++
		e := StepEnd()
		e.Seq = seq
		out = append(out, e)
	}
	if s.TurnOpen {
		seq++
		e := TurnEnd(ReasonInterrupted, "closed by crash recovery")
		e.Seq = seq
		out = append(out, e)
	}
	return out
}

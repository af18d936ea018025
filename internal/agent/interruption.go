package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/excerpt"
)

// RetryNoteKey is the output key of a visit that ran again after an
// earlier attempt of it was interrupted: the note the agent was given
// (Interruption.Note). It is plain text, never a ref.
const RetryNoteKey = "_retry_note"

// RetryOfEnv names the variable a tool node's command finds set when an
// earlier attempt of the same visit was interrupted: Interruption.Env.
const RetryOfEnv = "TETHER_RETRY_OF"

// Interruption is what the lost attempts of one visit had done, as their
// last heartbeats reported it. The attempt that runs the visit again
// tells the agent (Note), or a tool's command (Env), before it starts:
// the workspace and the conversation are restored to where they were
// before the visit, but anything the lost attempt did outside them (a
// push, an API call, a comment) may have happened.
type Interruption struct {
	// Attempts counts the attempts of the visit lost before this one.
	Attempts int `json:"attempts"`
	// Cause says how the latest was lost, when the attempt that runs
	// again knows it: "its worker stopped answering", "it failed: …".
	Cause string `json:"cause,omitempty"`
	// Started is true when the latest lost attempt had begun to run the
	// agent or the command, and the rest is what it had done by its last
	// heartbeat: how many tool calls, the latest ones (oldest first), the
	// files it wrote or edited, and how long it had run.
	Started   bool          `json:"started,omitempty"`
	ToolCalls int           `json:"tool_calls,omitempty"`
	Calls     []string      `json:"calls,omitempty"`
	Files     []string      `json:"files,omitempty"`
	Elapsed   time.Duration `json:"elapsed,omitempty"`
}

// maxCause bounds Interruption.Cause.
const maxCause = 200

// Bound cuts the free-text fields to their limits.
func (i Interruption) Bound() Interruption {
	i.Cause = excerpt.Head(i.Cause, maxCause)
	i.Calls = boundList(i.Calls, MaxProgressCalls, true)
	i.Files = boundList(i.Files, MaxProgressFiles, false)
	return i
}

func (i *Interruption) same(o *Interruption) bool {
	if i == nil || o == nil {
		return i == o
	}
	return i.Attempts == o.Attempts && i.Cause == o.Cause && i.Started == o.Started && i.ToolCalls == o.ToolCalls &&
		i.Elapsed == o.Elapsed && slices.Equal(i.Calls, o.Calls) && slices.Equal(i.Files, o.Files)
}

// After is what an attempt knows once the attempt whose last heartbeat
// reported last was lost (cause, if known, says how): one more lost
// attempt, with last's work when it had begun, else the work of the
// attempts before it.
func After(last Progress, cause string) Interruption {
	var i Interruption
	if last.Interrupted != nil {
		i = *last.Interrupted
	}
	i.Attempts++
	i.Cause = cause
	if last.Node != "" {
		i.Started = true
		i.ToolCalls, i.Calls, i.Files, i.Elapsed = last.ToolCalls, slices.Clone(last.Calls), slices.Clone(last.Files), last.Elapsed
		if len(i.Calls) == 0 && last.Activity != "" {
			i.Calls = []string{last.Activity}
		}
	}
	return i.Bound()
}

// Note is what the agent reads before its prompt when its turn runs again.
func (i Interruption) Note() string {
	var b strings.Builder
	b.WriteString("Note from Tether, the system running you: an earlier attempt of this very turn was interrupted")
	i.writeHow(&b)
	b.WriteString(", and this is that turn again from its start. ")
	switch {
	case !i.Started:
		b.WriteString("What it had done before it stopped is not known. ")
	case i.ToolCalls == 0:
		b.WriteString("It had made no tool call by the time it last reported. ")
	default:
		fmt.Fprintf(&b, "By the time it last reported it had made %d tool call%s", i.ToolCalls, plural(i.ToolCalls))
		if len(i.Calls) > 0 {
			lead := ""
			if len(i.Calls) < i.ToolCalls {
				lead = "the latest: "
			}
			fmt.Fprintf(&b, " (%s%s)", lead, strings.Join(quoteAll(i.Calls), ", "))
		}
		b.WriteString(". ")
		if len(i.Files) > 0 {
			fmt.Fprintf(&b, "It was changing %s. ", strings.Join(quoteAll(i.Files), ", "))
		}
	}
	b.WriteString("The workspace and this conversation are back to the state before that attempt: its changes to files here are gone. " +
		"Anything it did outside the workspace (a push, a deployment, an API call, a message or a comment) may already have happened: " +
		"check before you repeat anything with effects outside the workspace.")
	return b.String()
}

// writeHow says how the attempts ended: how many, after how long, and why.
func (i Interruption) writeHow(b *strings.Builder) {
	if i.Attempts > 1 {
		fmt.Fprintf(b, " (%d attempts were)", i.Attempts)
	}
	if i.Started && i.Elapsed > 0 {
		fmt.Fprintf(b, " after %s", roundDuration(i.Elapsed))
	}
	if i.Cause != "" {
		b.WriteString(" (" + i.Cause + ")")
	}
}

// ToolNote is what a tool visit's run records when it ran again: the
// same facts, for people reading the run's history (a tool's command
// reads Env instead).
func (i Interruption) ToolNote() string {
	var b strings.Builder
	b.WriteString("An earlier attempt of this tool visit was interrupted")
	i.writeHow(&b)
	if !i.Started {
		b.WriteString(", possibly before its command started")
	}
	b.WriteString("; the command ran again from the workspace as it was before that attempt, with " + RetryOfEnv + " set. " +
		"What the first run of the command did outside the workspace may have happened.")
	return b.String()
}

// Env is the value of RetryOfEnv for a tool's command: the interruption as
// one line of JSON.
func (i Interruption) Env() string {
	b, err := json.Marshal(struct {
		Attempts  int    `json:"attempts"`
		Cause     string `json:"cause,omitempty"`
		Started   bool   `json:"started"`
		ElapsedMS int64  `json:"elapsed_ms,omitempty"`
	}{i.Attempts, i.Cause, i.Started, i.Elapsed.Milliseconds()})
	if err != nil {
		return fmt.Sprintf(`{"attempts":%d}`, i.Attempts)
	}
	return string(b)
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = "`" + strings.ReplaceAll(s, "`", "'") + "`"
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// roundDuration is a duration as a person reads it: 38 s, 4 min 5 s.
func roundDuration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 1:
		return "less than a second"
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 3600:
		return fmt.Sprintf("%d min %d s", s/60, s%60)
	default:
		return fmt.Sprintf("%d h %d min", s/3600, s%3600/60)
	}
}

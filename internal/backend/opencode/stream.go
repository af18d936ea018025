package opencode

import (
	"encoding/json"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
)

// stream follows `opencode run --format json` events: step_start, text,
// tool_use, step_finish (one per model request, with its tokens and cost)
// and error, each with the session's id.
type stream struct {
	sessionID string
	// text is the assistant's text since the last tool call.
	text     string
	finished bool
	errors   []string
	// askUserCall is the call id of the last ask_user tool call.
	askUserCall string
	usage       agent.Usage
	// ownProviders: the model is a provider of opencode's own
	// configuration, which may price it.
	ownProviders bool

	track *cliexec.Tracker
}

type event struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      struct {
		Text   string `json:"text"`
		Tool   string `json:"tool"`
		CallID string `json:"callID"`
		State  struct {
			Status string         `json:"status"`
			Input  map[string]any `json:"input"`
			Error  string         `json:"error"`
		} `json:"state"`
		Tokens *struct {
			Input     int64 `json:"input"`
			Output    int64 `json:"output"`
			Reasoning int64 `json:"reasoning"`
			Cache     struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
		Cost float64 `json:"cost"`
	} `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	} `json:"error"`
}

// toolTitles name opencode's tools as the other CLIs' progress does.
var toolTitles = map[string]string{
	"write": "Write", "edit": "Edit", "read": "Read", "bash": "Bash", "list": "LS",
	"grep": "Grep", "glob": "Glob", "patch": "Edit", "webfetch": "WebFetch", "todowrite": "TodoWrite", "task": "Task",
}

// Report is what the events said about the visit: it failed when an
// error event came or no step finished.
func (s *stream) Report() cliexec.Report {
	r := cliexec.Report{SessionID: s.sessionID, Text: s.text, Usage: s.usage, AskUserID: s.askUserCall,
		Failure: strings.Join(s.errors, "\n"), Failed: len(s.errors) > 0 || !s.finished}
	r.Usage.CostKnown = s.ownProviders && s.usage.CostUSD > 0
	if !s.finished && r.Failure == "" {
		r.Failure = "the CLI reported no finished step"
	}
	return r
}

// Line reads one event.
func (s *stream) Line(b []byte) {
	var ev event
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	if s.sessionID == "" && ev.SessionID != "" {
		s.sessionID = ev.SessionID
	}
	switch ev.Type {
	case "text":
		s.text += ev.Part.Text
		s.track.Say(s.text)
	case "tool_use":
		s.text = ""
		if ev.Part.Tool == AskUserTool {
			s.askUserCall = ev.Part.CallID
		}
		title := toolTitles[ev.Part.Tool]
		if title == "" {
			title = ev.Part.Tool
		}
		s.track.ToolCall(title, mainArg(ev.Part.State.Input))
	case "step_finish":
		s.finished = true
		if t := ev.Part.Tokens; t != nil {
			// input counts neither the cache reads nor the cache writes;
			// output does not count the reasoning.
			s.usage.InputTokens += t.Input
			s.usage.OutputTokens += t.Output + t.Reasoning
			s.usage.CacheReadTokens += t.Cache.Read
			s.usage.CacheWriteTokens += t.Cache.Write
		}
		s.usage.CostUSD += ev.Part.Cost
		s.track.SetUsage(s.usage)
	case "error":
		if ev.Error != nil {
			msg := ev.Error.Data.Message
			if msg == "" {
				msg = ev.Error.Name
			}
			s.errors = append(s.errors, msg)
		}
	}
}

// mainArg is what a tool call works on: opencode's file tools name their
// file filePath.
func mainArg(input map[string]any) string {
	if p, ok := input["filePath"].(string); ok && p != "" {
		return p
	}
	return cliexec.MainArg(input)
}

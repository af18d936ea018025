package fakemodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Cues: a line of the latest user prompt that starts with one of these
// changes the reply. They are ignored when the request ends with a tool
// result, so that the model answers normally after a tool ran.
const (
	// CueAskUser asks the user the rest of the line: a call to the offered
	// tool whose name ends in "ask_user" (arguments {"questions":[text]}),
	// or, when no such tool is offered, the final text "ASK_USER: <text>".
	CueAskUser = "ASK_USER:"
	// CueReply makes the reply exactly the rest of the prompt after the cue
	// (for example a JSON object, to test structured output).
	CueReply = "REPLY:"
	// CueSleep delays the reply by a Go duration ("SLEEP: 30s").
	CueSleep = "SLEEP:"
	// CueHTTPError answers with that HTTP status and an error body.
	CueHTTPError = "HTTP_ERROR:"
	// answeredMarker, in the prompt that holds an ASK_USER cue, is the
	// user's answer to it: a visit whose conversation could not be resumed
	// (or a backend that keeps none) gets the answer in a fresh prompt
	// (activities.LostAnswerIntro), and the model does not ask again.
	answeredMarker = "The user's answer:"
	// CueSleepAfterTool delays the reply that follows a tool result, as an
	// agent that keeps working after it asked the user would.
	CueSleepAfterTool = "SLEEP_AFTER_TOOL:"
	// CueTokens makes every request of the turn cost the number of tokens
	// after it ("TOKENS: 400"): a budget test's exact arithmetic.
	CueTokens = "TOKENS:"
)

// AskUserTool is the suffix by which the server recognises the ask_user tool
// among the offered tools, whatever namespace a CLI gives it.
const AskUserTool = "ask_user"

// conversation is what the brain needs from a request, whatever its wire
// format.
type conversation struct {
	prompts         []string
	tools           []string
	afterToolResult bool
	toolResult      string
	// callsSincePrompt counts the model's tool calls after the latest
	// prompt: how far the turn's file cues have got.
	callsSincePrompt int
	// cwd is the CLI's working directory, when the request says it.
	cwd string
	// customTools are the offered Responses API custom (freeform) tools.
	customTools map[string]bool
}

// addPrompt adds the human-typed part of a user message's texts, if any,
// as one prompt.
func (c *conversation) addPrompt(texts []string) {
	var typed []string
	for _, t := range texts {
		if t = promptText(t); t != "" {
			typed = append(typed, t)
		}
	}
	if len(typed) > 0 {
		c.prompts = append(c.prompts, strings.Join(typed, "\n"))
		c.callsSincePrompt = 0
	}
}

// noteText looks for the CLI's working directory in text the CLI sent; the
// latest mention wins, since a resumed conversation still holds the
// working directory of its earlier turns.
func (c *conversation) noteText(text string) {
	if d := findCwd(text); d != "" {
		c.cwd = d
	}
}

// endWithToolResult notes that the request ends with a tool result made of
// texts.
func (c *conversation) endWithToolResult(texts []string) {
	c.afterToolResult = true
	c.toolResult = strings.Join(texts, "\n")
}

// reply is what the brain answers.
type reply struct {
	text   string
	tool   string // set for a tool call
	args   string // the tool call's JSON arguments (a custom tool's input)
	custom bool   // a Responses API custom tool call
	delay  time.Duration
	status int // non-zero: answer with this HTTP error
}

func (r reply) String() string {
	if r.tool != "" {
		return "tool:" + r.tool + " " + r.args
	}
	if r.status != 0 {
		return "http:" + strconv.Itoa(r.status)
	}
	return r.text
}

// Reply computes the deterministic answer to a conversation.
func (c conversation) reply() reply {
	n := len(c.prompts)
	if plan := append(c.filePlan(), c.shellPlan()...); c.callsSincePrompt < len(plan) {
		next := plan[c.callsSincePrompt]
		return reply{tool: next.name, args: next.args, custom: next.custom}
	}
	normal := fmt.Sprintf("turn %d: %s", n, strings.Join(c.prompts, " | "))
	if c.afterToolResult || n == 0 {
		r := reply{text: normal}
		if n > 0 {
			for _, line := range strings.Split(c.prompts[n-1], "\n") {
				if d, ok := strings.CutPrefix(strings.TrimSpace(line), CueSleepAfterTool); ok {
					r.delay, _ = time.ParseDuration(strings.TrimSpace(d))
				}
			}
		}
		return r
	}
	var r reply
	last := c.prompts[n-1]
	for _, line := range strings.Split(last, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, CueSleep):
			d, err := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(line, CueSleep)))
			if err == nil {
				r.delay = d
			}
		case strings.HasPrefix(line, CueHTTPError):
			code, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, CueHTTPError)))
			if err == nil {
				r.status = code
			}
		case strings.HasPrefix(line, CueAskUser) && r.tool == "" && r.text == "" && !strings.Contains(last, answeredMarker):
			q := strings.TrimSpace(strings.TrimPrefix(line, CueAskUser))
			if tool := c.askUserTool(); tool != "" {
				args, _ := json.Marshal(map[string]any{"questions": []string{q}})
				r.tool, r.args = tool, string(args)
			} else {
				r.text = CueAskUser + " " + q
			}
		}
	}
	if i := strings.Index(last, CueReply); i >= 0 && r.tool == "" {
		r.text = strings.TrimSpace(last[i+len(CueReply):])
	}
	if r.text == "" && r.tool == "" {
		r.text = normal
	}
	return r
}

// tokensPerCall is what the latest prompt's CueTokens line asks every
// request of its turn to cost, or 0.
func (c conversation) tokensPerCall() int {
	if len(c.prompts) == 0 {
		return 0
	}
	for _, line := range strings.Split(c.prompts[len(c.prompts)-1], "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), CueTokens); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

func (c conversation) askUserTool() string {
	for _, t := range c.tools {
		if strings.HasSuffix(t, AskUserTool) {
			return t
		}
	}
	return ""
}

var (
	reminderRE = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)
	wrappedRE  = regexp.MustCompile(`(?s)^<([A-Za-z][\w-]*)[^>]*>.*</([A-Za-z][\w-]*)>$`)
)

// promptText returns the part of a user text block that a human typed, or
// "" when the block is something the CLI injected (system reminders,
// environment context, instructions files).
func promptText(s string) string {
	s = strings.TrimSpace(reminderRE.ReplaceAllString(s, ""))
	if m := wrappedRE.FindStringSubmatch(s); m != nil && m[1] == m[2] {
		return ""
	}
	if strings.HasPrefix(s, "# AGENTS.md instructions") {
		return ""
	}
	return s
}

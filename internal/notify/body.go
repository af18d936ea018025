package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/excerpt"
	"github.com/tether-run/tether/internal/graph"
)

// Links are the addresses a notice carries, made when it is sent: the
// run's page on the console, and for a question either one answer link
// per option or one to the console's answer form.
type Links struct {
	Console string
	Answers []AnswerLink
	Form    string
}

// AnswerLink answers a question with Answer when opened and confirmed.
type AnswerLink struct {
	Answer string `json:"answer"`
	URL    string `json:"url"`
}

// Body is the request body of n in format, with links.
func Body(format string, n Notice, l Links) ([]byte, error) {
	var v any
	switch format {
	case FormatGitHub:
		return []byte(githubBody(n, l)), nil
	case FormatSlack:
		v = slackBody(n, l)
	case FormatTeams:
		v = teamsBody(n, l)
	case FormatJSON, "":
		v = jsonBody(n, l)
	default:
		return nil, fmt.Errorf("notify: unknown format %q", format)
	}
	// Written as it is (no \u0026 for '&'): the escapes a format needs
	// are its own (slackEscape, teamsEscape).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// JSONNotice is the generic JSON body (FormatJSON): what a receiver of
// its own parses.
type JSONNotice struct {
	// Type is always "tether.notice", Version 1.
	Type    string `json:"type"`
	Version int    `json:"version"`
	// ID is the idempotency key: the same for every attempt to send this
	// notice, so a receiver that keeps the ids it handled never acts twice.
	ID    string `json:"id"`
	Event string `json:"event"`
	Run   string `json:"run"`
	Graph string `json:"graph,omitempty"`
	Node  string `json:"node,omitempty"`
	// Status is the run's: waiting, failed, failed_resumable, completed.
	Status string `json:"status,omitempty"`
	// Resumable is set on failed and budget notices: whether `tether
	// resume` can continue the run.
	Resumable *bool         `json:"resumable,omitempty"`
	Question  *JSONQuestion `json:"question,omitempty"`
	Error     string        `json:"error,omitempty"`
	// ConsoleURL is the run's page on the console, when the workers know
	// the console's address (TETHER_CONSOLE_URL).
	ConsoleURL string `json:"console_url,omitempty"`
	Time       string `json:"time"`
}

// JSONQuestion is a waiting run's question in a JSON notice.
type JSONQuestion struct {
	ID      string   `json:"id"`
	Text    string   `json:"text"`
	Options []string `json:"options,omitempty"`
	// AnswerLinks answer with one option each; AnswerForm opens the
	// console's answer form. Both need a link key on the workers.
	AnswerLinks []AnswerLink `json:"answer_links,omitempty"`
	AnswerForm  string       `json:"answer_form,omitempty"`
}

func jsonBody(n Notice, l Links) JSONNotice {
	b := JSONNotice{
		Type: "tether.notice", Version: 1, ID: n.Key, Event: n.Event, Run: n.Run, Graph: n.Graph, Node: n.Node,
		Status: n.Status, Error: excerpt.Head(n.Error, maxError), ConsoleURL: l.Console, Time: n.Time.UTC().Format(time.RFC3339Nano),
	}
	if n.Event == graph.NotifyFailed || n.Event == graph.NotifyBudget {
		r := resumable(n)
		b.Resumable = &r
	}
	if q := n.Question; q != nil {
		b.Question = &JSONQuestion{ID: q.ID, Text: q.Text, Options: q.Options, AnswerLinks: l.Answers, AnswerForm: l.Form}
	}
	return b
}

func resumable(n Notice) bool {
	return n.Status == "failed_resumable" || n.Event == graph.NotifyBudget
}

// maxError bounds the error a notice repeats.
const maxError = 1000

// headline says what happened, in plain words.
func headline(n Notice) string {
	run := "Run " + n.Run
	if n.Graph != "" {
		run += " (" + n.Graph + ")"
	}
	switch n.Event {
	case graph.NotifyWaiting:
		return run + " is waiting for you"
	case graph.NotifyFailed:
		if resumable(n) {
			return run + " failed; it can be resumed"
		}
		return run + " failed"
	case graph.NotifyCompleted:
		return run + " completed"
	case graph.NotifyBudget:
		return run + " stopped: it spent a budget"
	}
	return run + ": " + n.Event
}

// what is the line under the headline: the resume command, the error.
func what(n Notice) string {
	switch n.Event {
	case graph.NotifyFailed, graph.NotifyBudget:
		s := excerpt.Head(n.Error, maxError)
		if resumable(n) {
			s += "\nContinue it with `tether resume " + n.Run + "`."
		}
		return strings.TrimSpace(s)
	case graph.NotifyCompleted:
		if n.Node != "" {
			return "It reached " + n.Node + "."
		}
	}
	return ""
}

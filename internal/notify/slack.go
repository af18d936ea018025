package notify

import (
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/excerpt"
)

// Slack's limits on an incoming webhook's blocks (Block Kit reference):
// a header's text 150 characters, a section's 3000, a button's text 75 and
// its URL 3000, 25 elements in an actions block, 10 in a context.
const (
	slackHeader  = 150
	slackSection = 3000
	slackButton  = 75
	slackURL     = 3000
)

// slackMessage is an incoming-webhook message: a notification text and
// Block Kit blocks.
type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string         `json:"type"`
	BlockID  string         `json:"block_id,omitempty"`
	Text     *slackText     `json:"text,omitempty"`
	Elements []slackElement `json:"elements,omitempty"`
}

type slackText struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji *bool  `json:"emoji,omitempty"`
}

// slackElement is a button (actions) or a text (context).
type slackElement struct {
	Type     string `json:"type"`
	Text     any    `json:"text"`
	ActionID string `json:"action_id,omitempty"`
	URL      string `json:"url,omitempty"`
	Style    string `json:"style,omitempty"`
}

func slackBody(n Notice, l Links) slackMessage {
	no := false
	head := headline(n)
	m := slackMessage{Text: slackEscape(head)}
	m.Blocks = append(m.Blocks, slackBlock{Type: "header", Text: &slackText{Type: "plain_text", Text: excerpt.Head(head, slackHeader), Emoji: &no}})
	if q := n.Question; q != nil {
		m.Text = slackEscape(excerpt.Head(head+": "+q.Text, slackSection))
		m.Blocks = append(m.Blocks, slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: excerpt.Head(slackEscape(q.Text), slackSection)}})
	}
	if w := what(n); w != "" {
		m.Blocks = append(m.Blocks, slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: excerpt.Head(slackEscape(w), slackSection)}})
	}
	var buttons []slackElement
	for i, a := range l.Answers {
		if len(a.URL) > slackURL {
			continue
		}
		b := slackElement{Type: "button", Text: slackText{Type: "plain_text", Text: excerpt.Head(a.Answer, slackButton), Emoji: &no},
			ActionID: fmt.Sprintf("answer-%d", i), URL: a.URL}
		if i == 0 {
			b.Style = "primary"
		}
		buttons = append(buttons, b)
	}
	if l.Form != "" && len(l.Form) <= slackURL {
		label := "Answer"
		if len(l.Answers) > 0 {
			label = "Another answer"
		}
		buttons = append(buttons, slackElement{Type: "button", Text: slackText{Type: "plain_text", Text: label, Emoji: &no}, ActionID: "answer-form", URL: l.Form})
	}
	if l.Console != "" && len(l.Console) <= slackURL {
		buttons = append(buttons, slackElement{Type: "button", Text: slackText{Type: "plain_text", Text: "Open the run", Emoji: &no}, ActionID: "open-run", URL: l.Console})
	}
	if len(buttons) > 0 {
		m.Blocks = append(m.Blocks, slackBlock{Type: "actions", BlockID: "tether-actions", Elements: buttons})
	}
	facts := []string{"run `" + slackEscape(n.Run) + "`"}
	if n.Node != "" {
		facts = append(facts, "node `"+slackEscape(n.Node)+"`")
	}
	if q := n.Question; q != nil {
		facts = append(facts, "question `"+slackEscape(q.ID)+"`")
	}
	facts = append(facts, n.Time.UTC().Format("2006-01-02 15:04 MST"))
	m.Blocks = append(m.Blocks, slackBlock{Type: "context", Elements: []slackElement{{Type: "mrkdwn", Text: strings.Join(facts, " · ")}}})
	return m
}

// slackEscape makes text safe in Slack's mrkdwn: '&', '<' and '>' are the
// characters Slack reads links, mentions (<!channel>, <@U…>) and dates
// from, and its documented escapes make them plain characters.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

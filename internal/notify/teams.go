package notify

import "strings"

// teamsMessage is what a Teams incoming webhook (a Workflows "post to a
// channel when a webhook request is received" flow) takes: a message with
// one Adaptive Card attachment.
type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string    `json:"contentType"`
	ContentURL  *string   `json:"contentUrl"`
	Content     teamsCard `json:"content"`
}

type teamsCard struct {
	Schema  string        `json:"$schema"`
	Type    string        `json:"type"`
	Version string        `json:"version"`
	Body    []teamsItem   `json:"body"`
	Actions []teamsAction `json:"actions,omitempty"`
}

// teamsItem is a TextBlock or a FactSet.
type teamsItem struct {
	Type   string      `json:"type"`
	Text   string      `json:"text,omitempty"`
	Weight string      `json:"weight,omitempty"`
	Size   string      `json:"size,omitempty"`
	Wrap   bool        `json:"wrap,omitempty"`
	Facts  []teamsFact `json:"facts,omitempty"`
}

type teamsFact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

type teamsAction struct {
	Type  string `json:"type"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

func teamsBody(n Notice, l Links) teamsMessage {
	card := teamsCard{Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: "1.4"}
	card.Body = append(card.Body, teamsItem{Type: "TextBlock", Text: teamsEscape(headline(n)), Weight: "Bolder", Size: "Medium", Wrap: true})
	if q := n.Question; q != nil {
		card.Body = append(card.Body, teamsItem{Type: "TextBlock", Text: teamsEscape(q.Text), Wrap: true})
	}
	if w := what(n); w != "" {
		card.Body = append(card.Body, teamsItem{Type: "TextBlock", Text: teamsEscape(w), Wrap: true})
	}
	facts := []teamsFact{{Title: "Run", Value: teamsEscape(n.Run)}}
	if n.Node != "" {
		facts = append(facts, teamsFact{Title: "Node", Value: teamsEscape(n.Node)})
	}
	if q := n.Question; q != nil {
		facts = append(facts, teamsFact{Title: "Question", Value: teamsEscape(q.ID)})
	}
	facts = append(facts, teamsFact{Title: "When", Value: n.Time.UTC().Format("2006-01-02 15:04 MST")})
	card.Body = append(card.Body, teamsItem{Type: "FactSet", Facts: facts})
	for _, a := range l.Answers {
		card.Actions = append(card.Actions, teamsAction{Type: "Action.OpenUrl", Title: a.Answer, URL: a.URL})
	}
	if l.Form != "" {
		card.Actions = append(card.Actions, teamsAction{Type: "Action.OpenUrl", Title: "Answer", URL: l.Form})
	}
	if l.Console != "" {
		card.Actions = append(card.Actions, teamsAction{Type: "Action.OpenUrl", Title: "Open the run", URL: l.Console})
	}
	return teamsMessage{Type: "message", Attachments: []teamsAttachment{{ContentType: "application/vnd.microsoft.card.adaptive", Content: card}}}
}

// teamsEscape keeps text a person or an agent wrote from becoming a link
// in a card's Markdown: the brackets and parentheses of [text](url) are
// escaped, as are the other characters Markdown reads as markup.
func teamsEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`, `(`, `\(`, `)`, `\)`, `*`, `\*`, `_`, `\_`, "`", "\\`", `<`, `&lt;`, `>`, `&gt;`).Replace(s)
}

package transcript

import (
	"bytes"
	"encoding/json"
	"strings"
)

// RawText is a JSON value as a person reads it: a string's text, anything
// else as compact JSON ("" for null or nothing).
func RawText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// BlocksText is a content value as a person reads it: a string's text,
// or the texts of an array of blocks that have one ({"text": …}),
// joined by newlines; anything else as compact JSON.
func BlocksText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var blocks []struct {
			Text *string `json:"text"`
		}
		if json.Unmarshal(raw, &blocks) == nil {
			var parts []string
			all := true
			for _, b := range blocks {
				if b.Text == nil {
					all = false
					break
				}
				parts = append(parts, *b.Text)
			}
			if all {
				return strings.Join(parts, "\n")
			}
		}
	}
	return RawText(raw)
}

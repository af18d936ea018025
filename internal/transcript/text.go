package transcript

import (
	"bytes"
	"encoding/json"
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

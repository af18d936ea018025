package treepolicy

import (
	"regexp"
	"strings"
)

// Redacted is what RedactText puts where a secret-shaped token was.
const Redacted = "[redacted]"

var (
	tokenRun   = regexp.MustCompile(`[A-Za-z0-9_+/.\-]{16,}`)
	privateKey = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`)
)

// RedactText returns s with what the secret scanner finds hidden: on each
// line holding a secret-shaped token, every run of 16 or more key characters that holds a digit
// or no underscore (a name such as ANTHROPIC_API_KEY stays) becomes [redacted], and a private key block goes whole.
// It is for showing text an agent or a tool wrote to a person (the
// console): the value never reaches the page, and the rest of the line
// stays readable. Text without a finding is returned as it is.
func RedactText(s string) string {
	b := []byte(s)
	lines := map[int]bool{}
	key := false
	for _, r := range secretRules {
		for i := 0; i < len(b); {
			j := strings.IndexByte(s[i:], r.b)
			if j < 0 {
				break
			}
			if kind := r.check(b, i+j); kind != "" {
				if kind == KindPrivateKey {
					key = true
				} else {
					lines[strings.LastIndexByte(s[:i+j], '\n')+1] = true
				}
			}
			i += j + 1
		}
	}
	if len(lines) == 0 && !key {
		return s
	}
	if len(lines) > 0 {
		var out strings.Builder
		for start := 0; start <= len(s); {
			end := strings.IndexByte(s[start:], '\n')
			line := s[start:]
			if end >= 0 {
				line = s[start : start+end]
			}
			if lines[start] {
				line = tokenRun.ReplaceAllStringFunc(line, func(tok string) string {
					if strings.ContainsAny(tok, "0123456789") || !strings.Contains(tok, "_") {
						return Redacted
					}
					return tok // a word such as ANTHROPIC_API_KEY, not a key
				})
			}
			out.WriteString(line)
			if end < 0 {
				break
			}
			out.WriteByte('\n')
			start += end + 1
		}
		s = out.String()
	}
	if key {
		s = privateKey.ReplaceAllString(s, Redacted+" private key")
	}
	return s
}

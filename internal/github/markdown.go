package github

import "strings"

// Escape makes one line of untrusted text plain in GitHub's markdown.
func Escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '@':
			b.WriteString("@\u200b")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case strings.ContainsRune("\\`*_{}[]()#+-.!|~:", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 && r != '\t':
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Package excerpt shortens text for a person to read at a glance: a
// summary, a step's detail, a notice, a progress line. Every cut falls on
// a rune boundary and is marked with "…", and the mark counts in the
// limit, so an excerpt of at most n bytes is at most n bytes. It is a
// leaf: the contract (internal/agent), the workflow, the notices and the
// CLI read text through it, and it imports nothing of Tether's.
package excerpt

import (
	"strings"
	"unicode/utf8"
)

// Mark ends (Head, Line) or starts (Tail) an excerpt that was cut.
const Mark = "…"

// Head is s cut to at most n bytes on a rune boundary, with Mark when
// cut. An n too small for the mark gives "".
func Head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < len(Mark) {
		return ""
	}
	s = s[:n-len(Mark)]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + Mark
}

// Tail is the last n bytes of s at most, on a rune boundary, with Mark in
// front when cut (and the blanks after it dropped). An n too small for
// the mark gives "".
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < len(Mark) {
		return ""
	}
	s = s[len(s)-n+len(Mark):]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return Mark + strings.TrimLeft(s, " \n")
}

// Line is the first line of s, with " …" when more lines follow, cut to
// at most n bytes as Head cuts.
func Line(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " " + Mark
	}
	return Head(s, n)
}

// Flat is s on one line: every run of blanks (spaces, tabs, newlines)
// one space, none at either end.
func Flat(s string) string { return strings.Join(strings.Fields(s), " ") }

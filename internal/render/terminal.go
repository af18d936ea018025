package render

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Terminal is s as `tether` prints it to a person: every byte that a
// terminal would act on rather than show is replaced by a visible escape,
// so that nothing an agent, a tool or a store wrote can drive the
// operator's terminal (OSC 52 writes the clipboard, OSC 0 the window
// title, OSC 8 hides a link's target, CSI moves the cursor over what was
// printed, a lone CR draws over a line, a bidi override reorders it):
//
//   - C0 controls and DEL as \x1b, \x07, \x7f (a CR as \r), but newline
//     and tab, and a CR just before a newline (a CRLF line end);
//   - C1 controls (U+0080–U+009F) as \u009b;
//   - the controls of text direction (U+061C, U+200E, U+200F,
//     U+202A–U+202E, U+2066–U+2069) as \u202e;
//   - each byte that is not valid UTF-8 as \xff.
//
// An escape sequence is thus shown as text: its introducer escaped, the
// rest plain characters. Everything else, other languages and symbols
// included, is left as it is.
func Terminal(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	writeTerminal(&b, s)
	return b.String()
}

// clean reports whether s needs no escape: printable ASCII, newline and
// tab only (the common case, checked without decoding).
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// writeTerminal writes s escaped to b.
func writeTerminal(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f):
			b.WriteByte(c)
			i++
			continue
		case c == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				b.WriteByte(c)
			} else {
				b.WriteString(`\r`)
			}
			i++
			continue
		case c < 0x80:
			fmt.Fprintf(b, `\x%02x`, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(b, `\x%02x`, c)
			n = 1
		case hidden(r):
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
}

// hidden reports whether a terminal acts on r instead of showing it: a C1
// control, or a control of text direction.
func hidden(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// TerminalWriter writes what passes through it as Terminal shows it. A
// write may end inside a UTF-8 sequence or just after a CR (a command's
// output arrives in pieces): those bytes wait for the next write, or for
// Flush, so that a character or a CRLF split between two writes is not
// taken for garbage. Flush once the last write is done.
type TerminalWriter struct {
	w       io.Writer
	pending []byte
}

// NewTerminalWriter returns a TerminalWriter writing to w.
func NewTerminalWriter(w io.Writer) *TerminalWriter { return &TerminalWriter{w: w} }

// Write escapes p (after what the last write left pending) and writes it.
// It reports all of p written when the escaped text was.
func (t *TerminalWriter) Write(p []byte) (int, error) {
	buf := append(t.pending, p...)
	keep := incompleteTail(buf)
	t.pending = append(t.pending[:0:0], buf[len(buf)-keep:]...)
	if err := t.emit(buf[:len(buf)-keep]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what the last write left pending.
func (t *TerminalWriter) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	p := t.pending
	t.pending = nil
	return t.emit(p)
}

func (t *TerminalWriter) emit(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	s := string(p)
	if !clean(s) {
		var b strings.Builder
		writeTerminal(&b, s)
		s = b.String()
	}
	_, err := io.WriteString(t.w, s)
	return err
}

// incompleteTail is how many bytes at the end of p may start a sequence
// the next write completes: a CR (a CRLF split in two), or the first
// bytes of a UTF-8 character.
func incompleteTail(p []byte) int {
	n := len(p)
	if n == 0 {
		return 0
	}
	if p[n-1] == '\r' {
		return 1
	}
	// The start of the last character, at most utf8.UTFMax-1 bytes back.
	for k := 1; k < utf8.UTFMax && k <= n; k++ {
		c := p[n-k]
		if c < 0x80 {
			return 0 // ASCII: complete
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(p[n-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}

package render

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The attacks of security finding 4, and text that must pass unchanged.
var terminalCases = map[string]string{
	// OSC 52: write the operator's clipboard.
	"\x1b]52;c;cm0gLXJmIH4=\x07": `\x1b]52;c;cm0gLXJmIH4=\x07`,
	// OSC 8: a link whose text hides its target; OSC 0: the window title.
	"\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\": `\x1b]8;;https://evil.example/\x1b\click\x1b]8;;\x1b\`,
	"\x1b]0;sudo password:\x07":                              `\x1b]0;sudo password:\x07`,
	// CSI: up a line, clear it, print a fake status.
	"ok\x1b[1A\x1b[2K✓ check  visit 1  ok": `ok\x1b[1A\x1b[2K✓ check  visit 1  ok`,
	// 8-bit C1 CSI, as a character and as a bare byte.
	"a\u009b1Ab": `a\u009b1Ab`,
	"a\x9b1Ab":   `a\x9b1Ab`,
	// A lone CR draws over the line; a CRLF line end is left alone.
	"tests failed\rtests passed": `tests failed\rtests passed`,
	"line one\r\nline two\r\n":   "line one\r\nline two\r\n",
	"ends in CR\r":               `ends in CR\r`,
	// Other controls, DEL, NUL, backspace over text.
	"a\x00b\x08c\x7fd\x0ce": `a\x00b\x08c\x7fd\x0ce`,
	// Bidi: an override that reorders what is shown, isolates, marks.
	"access = \u202euser\u202c": `access = \u202euser\u202c`,
	"\u2066x\u2069\u200f\u061c": `\u2066x\u2069\u200f\u061c`,
	// Invalid UTF-8.
	"bad \xff\xfe utf8 \xe2\x82": `bad \xff\xfe utf8 \xe2\x82`,
	// Left as it is.
	"plain\ttext\nwith newlines\n": "plain\ttext\nwith newlines\n",
	"naïve café · 日本語 → ✓ ✗ … ⏎ 🙂": "naïve café · 日本語 → ✓ ✗ … ⏎ 🙂",
	`a literal \x1b stays`:         `a literal \x1b stays`,
	"":                             "",
}

func TestTerminal(t *testing.T) {
	for in, want := range terminalCases {
		got := Terminal(in)
		assert.Equal(t, want, got, "%q", in)
		assert.True(t, utf8.ValidString(got), "%q", got)
		assert.Equal(t, got, Terminal(got), "escaping is stable: %q", got)
		for i := 0; i < len(got); i++ {
			c := got[i]
			if c < 0x20 && c != '\n' && c != '\t' && !(c == '\r' && i+1 < len(got) && got[i+1] == '\n') || c == 0x7f {
				t.Errorf("%q keeps control byte %#x", got, c)
			}
		}
	}
}

// A writer gives what Terminal gives, however the text is cut into
// writes: a character or a CRLF split between two writes is kept whole.
func TestTerminalWriter(t *testing.T) {
	var all strings.Builder
	for in := range terminalCases {
		all.WriteString(in)
		all.WriteString("|")
	}
	text := all.String() + "tail \xe2\x82\xac\r\n last\r"
	want := Terminal(text)
	for _, size := range []int{1, 2, 3, 5, 7, 64, len(text)} {
		var out bytes.Buffer
		w := NewTerminalWriter(&out)
		for i := 0; i < len(text); i += size {
			n, err := w.Write([]byte(text[i:min(i+size, len(text))]))
			require.NoError(t, err)
			require.Equal(t, min(size, len(text)-i), n)
		}
		require.NoError(t, w.Flush())
		assert.Equal(t, want, out.String(), "writes of %d bytes", size)
	}
}

func BenchmarkTerminal(b *testing.B) {
	line := strings.Repeat("✓ writer  visit 3  ok  12.4k tokens, $0.0123  draft of the adder\n", 64)
	b.Run("clean", func(b *testing.B) {
		for b.Loop() {
			Terminal(line)
		}
	})
	dirty := line + "\x1b]52;c;aGk=\x07"
	b.Run("escaped", func(b *testing.B) {
		for b.Loop() {
			Terminal(dirty)
		}
	})
}

package excerpt

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestHead(t *testing.T) {
	assert.Equal(t, "short", Head("short", 5))
	assert.Equal(t, "ab…", Head("abcdef", 5))
	for n := len(Mark); n < 40; n++ {
		s := strings.Repeat("é🦦a", 10)
		got := Head(s, n)
		assert.LessOrEqual(t, len(got), n, n)
		assert.True(t, utf8.ValidString(got), "%d: %q", n, got)
		assert.True(t, strings.HasSuffix(got, Mark), n)
		assert.True(t, strings.HasPrefix(s, strings.TrimSuffix(got, Mark)), n)
	}
	assert.Equal(t, "", Head("abcdef", 2), "no room for the mark")
}

func TestTail(t *testing.T) {
	assert.Equal(t, "short", Tail("short", 5))
	assert.Equal(t, "…ef", Tail("abcdef", 5))
	assert.Equal(t, "…last", Tail("first line\n   last", 7), "the blanks after the mark go")
	for n := len(Mark); n < 40; n++ {
		s := strings.Repeat("é🦦a", 10)
		got := Tail(s, n)
		assert.LessOrEqual(t, len(got), n, n)
		assert.True(t, utf8.ValidString(got), "%d: %q", n, got)
		assert.True(t, strings.HasSuffix(s, strings.TrimPrefix(got, Mark)), n)
	}
	assert.Equal(t, "", Tail("abcdef", 1))
}

func TestLine(t *testing.T) {
	assert.Equal(t, "ship it …", Line("ship it\nplease", 100))
	assert.Equal(t, "one line", Line("one line", 100))
	assert.Equal(t, "ship…", Line("ship it\nplease", 7))
	assert.LessOrEqual(t, len(Line(strings.Repeat("ü", 100), 51)), 51)
}

func TestFlat(t *testing.T) {
	assert.Equal(t, "a b c", Flat("  a\n\tb   c \n"))
	assert.Equal(t, "", Flat(" \n "))
}

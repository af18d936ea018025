package cliexec

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A session file's header line is read whole (also past a reader's
// buffer, and without its newline at the end of the file), and refused
// over MaxHeaderLine; only an empty file gives io.EOF.
func TestHeaderLine(t *testing.T) {
	read := func(s string) ([]byte, error) { return HeaderLine(bufio.NewReaderSize(strings.NewReader(s), 16)) }
	long := strings.Repeat("x", 100)
	for in, want := range map[string]string{"{}\nrest\n": "{}\n", "{}": "{}", long + "\nrest": long + "\n"} {
		line, err := read(in)
		require.NoError(t, err)
		assert.Equal(t, want, string(line))
	}
	_, err := read("")
	assert.ErrorIs(t, err, io.EOF)
	_, err = read(strings.Repeat("x", MaxHeaderLine+1))
	assert.ErrorContains(t, err, "first line is over")
	line, err := read(strings.Repeat("x", MaxHeaderLine-1) + "\n")
	require.NoError(t, err)
	assert.Len(t, line, MaxHeaderLine)
}

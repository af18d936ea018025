package cliexec

import (
	"bufio"
	"io"
	"os"
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

// FilesIn lists one directory below the root, by paths from the root,
// and nothing while it does not exist.
func TestFilesIn(t *testing.T) {
	root, err := os.OpenRoot(t.TempDir())
	require.NoError(t, err)
	defer root.Close()
	got, err := FilesIn("a/b")(root, "id")
	require.NoError(t, err)
	assert.Empty(t, got)
	require.NoError(t, root.MkdirAll("a/b/c", 0o755))
	require.NoError(t, root.WriteFile("a/b/s.jsonl", []byte("{}"), 0o600))
	require.NoError(t, root.WriteFile("top.jsonl", []byte("{}"), 0o600))
	got, err = FilesIn("a/b")(root, "id")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/b/c", "a/b/s.jsonl"}, got)
	got, err = FilesIn(".")(root, "id")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "top.jsonl"}, got)
}

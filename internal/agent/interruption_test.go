package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A tracker's tool calls become what a later attempt is told: the latest
// calls, the files changed, how long the lost attempt ran.
func TestNoteNamesWhatTheLostAttemptStarted(t *testing.T) {
	var p Progress
	p.Node, p.Visit = "writer", 2
	p.AddCall("Read", "main.go", "Read main.go")
	p.AddCall("Edit", "main.go", "Edit main.go")
	p.AddCall("Bash", "git push origin main", "Bash git push origin main")
	p.Elapsed = 38 * time.Second
	i := After(p, "its worker was lost or stopped")
	assert.Equal(t, 1, i.Attempts)
	assert.Equal(t, []string{"main.go"}, i.Files, "only calls that change a file name files")
	note := i.Note()
	for _, want := range []string{"earlier attempt of this very turn was interrupted", "after 38 s", "3 tool calls",
		"`Bash git push origin main`", "It was changing `main.go`", "back to the state before that attempt",
		"check before you repeat anything with effects outside the workspace"} {
		assert.Contains(t, note, want)
	}
}

// An attempt lost before it began keeps the facts of the one before it,
// and counts both.
func TestAfterCarriesEarlierAttempts(t *testing.T) {
	first := Progress{Node: "writer", Visit: 1, ToolCalls: 1, Calls: []string{"Bash deploy.sh"}, Elapsed: 5 * time.Second}
	i1 := After(first, "")
	second := Progress{Interrupted: &i1} // lost before its agent started
	i2 := After(second, "its worker was lost or stopped")
	assert.Equal(t, 2, i2.Attempts)
	assert.Equal(t, []string{"Bash deploy.sh"}, i2.Calls)
	assert.Contains(t, i2.Note(), "(2 attempts were)")
	assert.Contains(t, i2.Note(), "`Bash deploy.sh`")

	unknown := After(Progress{}, "")
	assert.False(t, unknown.Started)
	assert.Contains(t, unknown.Note(), "What it had done before it stopped is not known")
	assert.JSONEq(t, `{"attempts":1,"started":false}`, unknown.Env())
}

// A Progress stays small however many calls a visit makes.
func TestProgressKeepsTheLatestCalls(t *testing.T) {
	var p Progress
	for i := range 50 {
		p.AddCall("Write", strings.Repeat("f", i+1), "Write "+strings.Repeat("f", i+1))
	}
	assert.Len(t, p.Calls, MaxProgressCalls)
	assert.Equal(t, "Write "+strings.Repeat("f", 50), p.Calls[MaxProgressCalls-1])
	assert.Len(t, p.Files, MaxProgressFiles)
	assert.Equal(t, "f", p.Files[0], "the files first changed are kept")
	assert.Equal(t, 50, p.ToolCalls)
	long := Progress{Calls: []string{strings.Repeat("x", 1000)}}.Bound()
	assert.LessOrEqual(t, len(long.Calls[0]), MaxProgressActivity)
	assert.True(t, p.Same(p))
	q := p
	q.Calls = append([]string{"other"}, p.Calls[1:]...)
	assert.False(t, p.Same(q))
}

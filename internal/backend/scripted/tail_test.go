package scripted

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

// A resume reads the last turn only, and the turns still count on: the
// count comes from the number each turn/start carries, not from how many
// turns were read. A line damaged early in the log proves the resume did
// not read it.
func TestResumeReadsOnlyTheLastTurn(t *testing.T) {
	b := New(Options{})
	e := env(t)
	res := run(t, b, agent.Request{Prompt: "go", Script: []string{"turn {{.Turn}}"}, Env: e})
	id := res.SessionID
	for range 4 {
		res = run(t, b, agent.Request{Prompt: "go", SessionID: id, Script: []string{"turn {{.Turn}}"}, Env: e})
	}
	assert.Equal(t, "turn 5", res.Text)

	path := filepath.Join(SessionsDir(e.StateRoot), jsonl.RelPath(e.Workdir, id))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	require.Contains(t, lines[2], `"role":"user"`)
	lines[2] = strings.Replace(lines[2], `"role"`, `"ro\xffle"`, 1)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))

	res = run(t, b, agent.Request{Prompt: "go", SessionID: id, Script: []string{"turn {{.Turn}}"}, Env: e})
	assert.Equal(t, "turn 6", res.Text)

	// A template that reads the history reads the whole log, and so meets
	// the damage.
	_, err = b.Execute(ctx, agent.Request{Prompt: "go", SessionID: id, Script: []string{"{{len .History}}"}, Env: e})
	require.Error(t, err)
}

// A log written before turn/starts carried their number is counted whole.
func TestResumeCountsAnUnnumberedLog(t *testing.T) {
	b := New(Options{})
	e := env(t)
	res := run(t, b, agent.Request{Prompt: "go", Env: e})
	id := res.SessionID
	run(t, b, agent.Request{Prompt: "go", SessionID: id, Env: e})

	path := filepath.Join(SessionsDir(e.StateRoot), jsonl.RelPath(e.Workdir, id))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	old := strings.ReplaceAll(string(data), `,"meta":{"turn":1}`, "")
	old = strings.ReplaceAll(old, `,"meta":{"turn":2}`, "")
	require.NotEqual(t, string(data), old)
	require.NotContains(t, old, `"meta"`)
	require.NoError(t, os.WriteFile(path, []byte(old), 0o600))

	res = run(t, b, agent.Request{Prompt: "go", SessionID: id, Script: []string{"turn {{.Turn}}"}, Env: e})
	assert.Equal(t, "turn 3", res.Text)
	res = run(t, b, agent.Request{Prompt: "go", SessionID: id, Script: []string{"turn {{.Turn}} of {{len .History}} before"}, Env: e})
	assert.Equal(t, "turn 4 of 3 before", res.Text)
	res = run(t, b, agent.Request{Prompt: "go", SessionID: id, Script: []string{"turn {{.Turn}}"}, Env: e})
	assert.Equal(t, "turn 5", res.Text)
}

package cliexec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tether-run/tether/internal/agent"
)

// The tracker reports each change once, names tool calls by the file they
// touch relative to the working directory, and keeps the reply's tail.
func TestTrackerReportsChanges(t *testing.T) {
	var got []agent.Progress
	tr := NewTracker("claude_code", agent.Request{NodeID: "writer", Visit: 3, Env: agent.Env{Workdir: "/w/run"},
		Progress: func(p agent.Progress) { got = append(got, p) }})
	tr.ToolCall("Edit", "/w/run/main.go")
	tr.ToolCall("Bash", "go test ./...\necho done")
	tr.ToolCall("Read", "/etc/hosts")
	tr.Say("   ")
	tr.Say(strings.Repeat("x", 300) + " done")
	tr.SetUsage(agent.Usage{InputTokens: 12000, OutputTokens: 400})
	tr.SetUsage(agent.Usage{InputTokens: 12000, OutputTokens: 400})
	require.Len(t, got, 5, "a blank text and an unchanged usage are no change")
	assert.Equal(t, "Edit main.go", got[0].Activity)
	assert.Equal(t, "Bash go test ./... …", got[1].Activity)
	assert.Equal(t, "Read /etc/hosts", got[2].Activity, "a path outside the working directory stays whole")
	last := got[4]
	assert.Equal(t, 3, last.ToolCalls)
	assert.Equal(t, "writer", last.Node)
	assert.Equal(t, 3, last.Visit)
	assert.Equal(t, "claude_code", last.Backend)
	assert.LessOrEqual(t, len(last.Text), agent.MaxProgressText)
	assert.True(t, strings.HasSuffix(last.Text, "x done"))
	assert.Equal(t, int64(12400), tr.Progress().Usage.Tokens())
}

func TestMainArg(t *testing.T) {
	assert.Equal(t, "a.go", MainArg(map[string]any{"file_path": "a.go", "content": "x"}))
	assert.Equal(t, "ls", MainArg(map[string]any{"command": "ls", "description": "list"}))
	assert.Equal(t, "", MainArg(map[string]any{"todos": []any{}}))
}

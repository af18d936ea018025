package opencode

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
)

func TestPermissionRules(t *testing.T) {
	for name, c := range map[string]struct {
		v    visitSettings
		want map[string]string
	}{
		"none":      {visitSettings{}, map[string]string{"*": "allow"}},
		"read-only": {visitSettings{permissions: agent.PermissionReadOnly}, map[string]string{"*": "allow", "edit": "deny", "bash": "deny"}},
		"edit":      {visitSettings{permissions: agent.PermissionEdit}, map[string]string{"*": "allow", "edit": "allow", "bash": "deny"}},
		"full":      {visitSettings{permissions: agent.PermissionFull}, map[string]string{"*": "allow", "edit": "allow", "bash": "allow"}},
		// A tool list denies the rest; each listed tool keeps the level's
		// action, write is governed by edit.
		"tools under read-only": {visitSettings{permissions: agent.PermissionReadOnly, Merged: cliexec.Merged{Tools: []string{"read", "write", "bash"}}},
			map[string]string{"*": "deny", "read": "allow", "edit": "deny", "bash": "deny"}},
		"tools": {visitSettings{Merged: cliexec.Merged{Tools: []string{"read", "write"}}}, map[string]string{"*": "deny", "read": "allow", "edit": "allow"}},
		"disallowed": {visitSettings{permissions: agent.PermissionFull, Merged: cliexec.Merged{DisallowedTools: []string{"bash", "webfetch"}}},
			map[string]string{"*": "allow", "edit": "allow", "bash": "deny", "webfetch": "deny"}},
	} {
		assert.Equal(t, c.want, permissionRules(c.v, false), name)
	}
}

func TestStreamSumsTheVisitsSteps(t *testing.T) {
	s := stream{track: cliexec.NewTracker(Name, agent.Request{})}
	for _, l := range []string{
		`{"type":"step_start","sessionID":"ses_a","part":{"type":"step-start"}}`,
		`{"type":"tool_use","sessionID":"ses_a","part":{"tool":"write","state":{"status":"completed","input":{"filePath":"new.txt","content":"x"}}}}`,
		`{"type":"step_finish","sessionID":"ses_a","part":{"tokens":{"input":1020,"output":10,"reasoning":2,"cache":{"read":0,"write":0}},"cost":0}}`,
		`{"type":"text","sessionID":"ses_a","part":{"text":"done"}}`,
		`{"type":"step_finish","sessionID":"ses_a","part":{"tokens":{"input":40,"output":5,"reasoning":0,"cache":{"read":1000,"write":3}},"cost":0.5}}`,
		`not json`,
	} {
		s.Line([]byte(l))
	}
	assert.Equal(t, "ses_a", s.sessionID)
	assert.Equal(t, "done", s.text)
	assert.True(t, s.finished)
	assert.Empty(t, s.errors)
	assert.Equal(t, agent.Usage{InputTokens: 1060, OutputTokens: 17, CacheReadTokens: 1000, CacheWriteTokens: 3, CostUSD: 0.5}, s.usage)
	assert.Equal(t, "Write new.txt", s.track.Progress().Activity)

	s.Line([]byte(`{"type":"error","sessionID":"ses_a","error":{"name":"APIError","data":{"message":"Bad Request: fake model: HTTP 400 on cue"}}}`))
	assert.Equal(t, []string{"Bad Request: fake model: HTTP 400 on cue"}, s.errors)
}

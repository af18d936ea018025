package pi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/backend/clitest"
)

func argv(e *Executor, s backend.Settings) []string {
	return e.args(backend.Request{Settings: s, Env: backend.Env{StateRoot: "/r", Workdir: "/w"}}, "m", "")
}

func TestPermissionsMapToTools(t *testing.T) {
	e := New(Options{})
	for level, want := range map[string]string{
		backend.PermissionReadOnly: "read,grep,find,ls",
		backend.PermissionEdit:     "read,grep,find,ls,edit,write",
		backend.PermissionFull:     "read,bash,edit,write,grep,find,ls",
	} {
		got, _ := clitest.Flag(argv(e, backend.Settings{Permissions: level}), "--tools")
		assert.Equal(t, want, got, "permissions %q", level)
	}
	_, set := clitest.Flag(argv(e, backend.Settings{}), "--tools")
	assert.False(t, set, "no setting keeps pi's default tools")
}

func TestToolsPermissionsAndDenylistCombine(t *testing.T) {
	e := New(Options{Tools: []string{"read"}})
	cases := []struct {
		s    backend.Settings
		want string
	}{
		{backend.Settings{}, "read"},
		{backend.Settings{Tools: []string{"read", "bash"}}, "read,bash"},
		{backend.Settings{Tools: []string{"read", "bash", "write"}, Permissions: backend.PermissionEdit}, "read,write"},
		{backend.Settings{DisallowedTools: []string{"read"}}, ""},
	}
	for _, c := range cases {
		got, _ := clitest.Flag(argv(e, c.s), "--tools")
		assert.Equal(t, c.want, got, "%+v", c.s)
	}
	assert.Contains(t, argv(e, backend.Settings{DisallowedTools: []string{"read"}}), "--no-tools")
	got, _ := clitest.Flag(argv(New(Options{}), backend.Settings{DisallowedTools: []string{"bash"}}), "--tools")
	assert.Equal(t, "read,edit,write", got, "a denylist alone cuts pi's default set")
}

func TestPromptFlags(t *testing.T) {
	e := New(Options{SystemPrompt: "worker sys", AppendSystemPrompt: "worker add"})
	a := argv(e, backend.Settings{SystemPrompt: "node sys", AppendSystemPrompt: "node add"})
	sys, _ := clitest.Flag(a, "--system-prompt")
	add, _ := clitest.Flag(a, "--append-system-prompt")
	assert.Equal(t, "node sys", sys)
	assert.Equal(t, "node add", add)
	sys, _ = clitest.Flag(argv(e, backend.Settings{}), "--system-prompt")
	assert.Equal(t, "worker sys", sys)
}

func TestEnvIsBasePlusNamedVariables(t *testing.T) {
	t.Setenv("TETHER_TEST_SECRET", "s3cret")
	t.Setenv("TETHER_TEST_NODE", "n")
	t.Setenv("OPENAI_API_KEY", "provider-key")
	env := New(Options{BaseURL: "http://fake/v1", APIKey: "k"}).env(backend.Request{Settings: backend.Settings{Env: []string{"TETHER_TEST_NODE"}}}, "/agent")
	assert.Contains(t, env, "TETHER_TEST_NODE=n")
	assert.Contains(t, env, APIKeyVar+"=k")
	for _, kv := range env {
		assert.NotContains(t, kv, "s3cret")
		assert.False(t, strings.HasPrefix(kv, "OPENAI_API_KEY="))
	}
	builtin := New(Options{Provider: "openai"}).env(backend.Request{}, "/agent")
	assert.Contains(t, builtin, "OPENAI_API_KEY=provider-key", "a built-in provider gets its own key variable")
}

func TestFingerprintFollowsSettings(t *testing.T) {
	clitest.DistinctFingerprints(t, New(Options{BaseURL: "http://a/v1", Model: "m1"}), map[string]backend.Settings{
		"read-only":  {Permissions: backend.PermissionReadOnly},
		"edit":       {Permissions: backend.PermissionEdit},
		"tools":      {Tools: []string{"read"}},
		"disallowed": {DisallowedTools: []string{"bash"}},
		"system":     {SystemPrompt: "x"},
		"append":     {AppendSystemPrompt: "x"},
	})
}

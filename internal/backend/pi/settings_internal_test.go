package pi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/clitest"
)

func argv(o Options, s agent.Settings) []string {
	e, c := drv(o)
	return e.args(c, agent.Request{Settings: s, Env: agent.Env{StateRoot: "/r", Workdir: "/w"}}, "m", "")
}

func TestPermissionsMapToTools(t *testing.T) {
	e := Options{}
	for level, want := range map[string]string{
		agent.PermissionReadOnly: "read,grep,find,ls",
		agent.PermissionEdit:     "read,grep,find,ls,edit,write",
		agent.PermissionFull:     "read,bash,edit,write,grep,find,ls",
	} {
		got, _ := clitest.Flag(argv(e, agent.Settings{Permissions: level}), "--tools")
		assert.Equal(t, want, got, "permissions %q", level)
	}
	_, set := clitest.Flag(argv(e, agent.Settings{}), "--tools")
	assert.False(t, set, "no setting keeps pi's default tools")
}

func TestToolsPermissionsAndDenylistCombine(t *testing.T) {
	e := Options{Tools: []string{"read"}}
	cases := []struct {
		s    agent.Settings
		want string
	}{
		{agent.Settings{}, "read"},
		{agent.Settings{Tools: []string{"read", "bash"}}, "read,bash"},
		{agent.Settings{Tools: []string{"read", "bash", "write"}, Permissions: agent.PermissionEdit}, "read,write"},
		{agent.Settings{DisallowedTools: []string{"read"}}, ""},
	}
	for _, c := range cases {
		got, _ := clitest.Flag(argv(e, c.s), "--tools")
		assert.Equal(t, c.want, got, "%+v", c.s)
	}
	assert.Contains(t, argv(e, agent.Settings{DisallowedTools: []string{"read"}}), "--no-tools")
	got, _ := clitest.Flag(argv(Options{}, agent.Settings{DisallowedTools: []string{"bash"}}), "--tools")
	assert.Equal(t, "read,edit,write", got, "a denylist alone cuts pi's default set")
}

func TestPromptFlags(t *testing.T) {
	e := Options{SystemPrompt: "worker sys", AppendSystemPrompt: "worker add"}
	a := argv(e, agent.Settings{SystemPrompt: "node sys", AppendSystemPrompt: "node add"})
	sys, _ := clitest.Flag(a, "--system-prompt")
	add, _ := clitest.Flag(a, "--append-system-prompt")
	assert.Equal(t, "node sys", sys)
	assert.Equal(t, "node add", add)
	sys, _ = clitest.Flag(argv(e, agent.Settings{}), "--system-prompt")
	assert.Equal(t, "worker sys", sys)
}

func TestEnvIsBasePlusNamedVariables(t *testing.T) {
	t.Setenv("TETHER_TEST_SECRET", "s3cret")
	t.Setenv("TETHER_TEST_NODE", "n")
	t.Setenv("OPENAI_API_KEY", "provider-key")
	d, c := drv(Options{Options: cliexec.Options{BaseURL: "http://fake/v1", APIKey: "k"}})
	req := agent.Request{Settings: agent.Settings{Env: []string{"TETHER_TEST_NODE"}}}
	env := c.Environ(req, d.env(c, req, &cliexec.Visit{APIKey: "k"}, "/agent")...)
	assert.Contains(t, env, "TETHER_TEST_NODE=n")
	assert.Contains(t, env, APIKeyVar+"=k")
	for _, kv := range env {
		assert.NotContains(t, kv, "s3cret")
		assert.False(t, strings.HasPrefix(kv, "OPENAI_API_KEY="))
	}
	d, c = drv(Options{Options: cliexec.Options{APIKey: "k"}, Provider: "openai"})
	builtin := d.env(c, agent.Request{}, &cliexec.Visit{APIKey: "k"}, "/agent")
	assert.Contains(t, builtin, "OPENAI_API_KEY=k", "a built-in provider gets the key under its own variable")
	// The key is the executor's (the worker's configuration read it once):
	// the executor never reads the worker's environment for one.
	d, c = drv(Options{Provider: "openai"})
	for _, kv := range d.env(c, agent.Request{}, &cliexec.Visit{}, "/agent") {
		assert.False(t, strings.HasPrefix(kv, "OPENAI_API_KEY="), kv)
	}
}

func TestFingerprintFollowsSettings(t *testing.T) {
	a := New(Options{Options: cliexec.Options{BaseURL: "http://a/v1", Model: "m1"}, AskUserConvention: true})
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), New(Options{Options: cliexec.Options{BaseURL: "http://a/v1", Model: "m1"}}).Fingerprint(agent.Request{}), "the ask_user convention")
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), New(Options{Options: cliexec.Options{BaseURL: "http://a/v1", Model: "m1"}, AskUserConvention: true, Tools: []string{}}).Fingerprint(agent.Request{}), "no tools at all")
	clitest.DistinctFingerprints(t, New(Options{Options: cliexec.Options{BaseURL: "http://a/v1", Model: "m1"}}), map[string]agent.Settings{
		"read-only":  {Permissions: agent.PermissionReadOnly},
		"edit":       {Permissions: agent.PermissionEdit},
		"tools":      {Tools: []string{"read"}},
		"disallowed": {DisallowedTools: []string{"bash"}},
		"system":     {SystemPrompt: "x"},
		"append":     {AppendSystemPrompt: "x"},
	})
}

// drv is the driver of the executor of o (its options, defaults filled)
// and the executor's CLI, for the driver's own methods.
func drv(o Options) (Options, *cliexec.CLI) {
	e := New(o)
	return e.Driver.(Options), &e.CLI
}

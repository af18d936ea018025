package claude

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/clitest"
)

func TestPermissionsMapToPermissionMode(t *testing.T) {
	e := Options{PermissionMode: "plan"}
	for level, mode := range map[string]string{
		"": "plan", agent.PermissionReadOnly: "dontAsk", agent.PermissionEdit: "acceptEdits", agent.PermissionFull: "bypassPermissions",
	} {
		got, _ := clitest.Flag(clitest.Argv(t, New(e), agent.Settings{Permissions: level}), "--permission-mode")
		assert.Equal(t, mode, got, "permissions %q", level)
	}
	_, set := clitest.Flag(clitest.Argv(t, New(Options{}), agent.Settings{}), "--permission-mode")
	assert.False(t, set, "no setting anywhere keeps the CLI's default")
	d, c := drv(Options{})
	full := d.env(c, agent.Request{Settings: agent.Settings{Permissions: agent.PermissionFull}, Env: agent.Env{StateRoot: "/r"}}, &cliexec.Visit{})
	assert.Equal(t, os.Geteuid() == 0, slices.Contains(full, "IS_SANDBOX=1"), "bypassPermissions as root needs IS_SANDBOX=1")
}

func TestToolsAndPromptsOverrideDefaults(t *testing.T) {
	e := (Options{Tools: []string{"Read"}, DisallowedTools: []string{"WebFetch"}, SystemPrompt: "worker sys", AppendSystemPrompt: "worker add"})
	a := clitest.Argv(t, New(e), agent.Settings{})
	tools, _ := clitest.Flag(a, "--tools")
	denied, _ := clitest.Flag(a, "--disallowedTools")
	sys, _ := clitest.Flag(a, "--system-prompt")
	add, _ := clitest.Flag(a, "--append-system-prompt")
	assert.Equal(t, []string{"Read", "WebFetch", "worker sys", "worker add"}, []string{tools, denied, sys, add})

	a = clitest.Argv(t, New(e), agent.Settings{Tools: []string{"Read", "Edit"}, DisallowedTools: []string{"Bash"}, SystemPrompt: "node sys", AppendSystemPrompt: "node add"})
	tools, _ = clitest.Flag(a, "--tools")
	denied, _ = clitest.Flag(a, "--disallowedTools")
	sys, _ = clitest.Flag(a, "--system-prompt")
	add, _ = clitest.Flag(a, "--append-system-prompt")
	assert.Equal(t, []string{"Read,Edit", "Bash", "node sys", "node add"}, []string{tools, denied, sys, add})
}

func TestEnvIsBasePlusNamedVariables(t *testing.T) {
	t.Setenv("TETHER_TEST_SECRET", "s3cret")
	t.Setenv("TETHER_TEST_NODE", "n")
	t.Setenv("TETHER_TEST_WORKER", "w")
	t.Setenv("ANTHROPIC_BASE_URL", "http://worker-wide")
	t.Setenv("ANTHROPIC_API_KEY", "worker-key")
	e, c := drv(Options{Options: cliexec.Options{BaseURL: "http://fake", APIKey: "k", PassEnv: []string{"TETHER_TEST_WORKER"}}})
	req := agent.Request{Settings: agent.Settings{Env: []string{"TETHER_TEST_NODE", "ANTHROPIC_BASE_URL"}}, Env: agent.Env{StateRoot: "/r"}}
	env := c.Environ(req, e.env(c, req, &cliexec.Visit{BaseURL: "http://fake", APIKey: "k"})...)
	assert.Contains(t, env, "TETHER_TEST_NODE=n")
	assert.Contains(t, env, "TETHER_TEST_WORKER=w")
	assert.Contains(t, env, "PATH="+os.Getenv("PATH"))
	assert.Contains(t, env, "ANTHROPIC_BASE_URL=http://fake")
	assert.NotContains(t, env, "ANTHROPIC_BASE_URL=http://worker-wide", "a node cannot pass the worker's value of a variable the executor sets")
	assert.Contains(t, env, "ANTHROPIC_API_KEY=k")
	for _, kv := range env {
		assert.NotContains(t, kv, "s3cret", "a variable nobody named stays with the worker")
	}
	// The key is the visit's (the relay's placeholder): without one, the
	// CLI gets none, whatever the worker's environment.
	d, c := drv(Options{})
	for _, kv := range d.env(c, agent.Request{Env: agent.Env{StateRoot: "/r"}}, &cliexec.Visit{}) {
		assert.False(t, strings.HasPrefix(kv, "ANTHROPIC_API_KEY="), kv)
	}
}

func TestTimeoutSetting(t *testing.T) {
	c := New(Options{Options: cliexec.Options{Timeout: time.Hour}}).CLI
	v := &cliexec.Visit{Dir: t.TempDir()} // Spec makes its tmp there
	assert.Equal(t, time.Hour, c.Spec(context.Background(), agent.Request{}, v).Timeout)
	assert.Equal(t, time.Minute, c.Spec(context.Background(), agent.Request{Settings: agent.Settings{Timeout: time.Minute}}, v).Timeout)
}

func TestFingerprintFollowsSettings(t *testing.T) {
	e := New(Options{Options: cliexec.Options{Model: "m1"}})
	clitest.DistinctFingerprints(t, e, map[string]agent.Settings{
		"permissions": {Permissions: agent.PermissionEdit},
		"tools":       {Tools: []string{"Read"}},
		"disallowed":  {DisallowedTools: []string{"Read"}},
		"system":      {SystemPrompt: "x"},
		"append":      {AppendSystemPrompt: "x"},
	})
	assert.Equal(t, New(Options{Options: cliexec.Options{Model: "m1"}, PermissionMode: "acceptEdits"}).Fingerprint(agent.Request{}),
		e.Fingerprint(agent.Request{Settings: agent.Settings{Permissions: agent.PermissionEdit}}),
		"a node's edit is the worker's acceptEdits")
	a := New(Options{Options: cliexec.Options{Model: "m1"}, AllowedTools: []string{"Read", "Bash"}})
	assert.Equal(t, a.Fingerprint(agent.Request{}), New(Options{Options: cliexec.Options{Model: "m1"}, AllowedTools: []string{"Bash", "Read"}}).Fingerprint(agent.Request{}), "tool order does not matter")
	for name, other := range map[string]Options{
		"allowed tools": {Options: cliexec.Options{Model: "m1"}, AllowedTools: []string{"Read"}},
		"bypass":        {Options: cliexec.Options{Model: "m1"}, AllowedTools: []string{"Read", "Bash"}, PermissionMode: "bypassPermissions"},
		"ask_user tool": {Options: cliexec.Options{Model: "m1", AskUser: []string{"x"}}, AllowedTools: []string{"Read", "Bash"}},
	} {
		assert.NotEqual(t, a.Fingerprint(agent.Request{}), New(other).Fingerprint(agent.Request{}), name)
	}
}

// drv is the driver of the executor of o (its options, defaults filled)
// and the executor's CLI, for the driver's own methods.
func drv(o Options) (Options, *cliexec.CLI) {
	e := New(o)
	return e.Driver.(Options), &e.CLI
}

func TestANodeThatMayNotAskStartsNoServer(t *testing.T) {
	e := New(Options{Options: cliexec.Options{Model: "m1", AskUser: []string{"/opt/tether/tether-ask-user"}}})
	asks := clitest.Argv(t, e, agent.Settings{})
	_, withServer := clitest.Flag(asks, "--mcp-config")
	allowed, _ := clitest.Flag(asks, "--allowedTools")
	assert.True(t, withServer, "a node that may ask gets the server")
	assert.Contains(t, allowed, AskUserTool)

	never := clitest.Argv(t, e, agent.Settings{NoAskUser: true})
	_, withServer = clitest.Flag(never, "--mcp-config")
	allowed, _ = clitest.Flag(never, "--allowedTools")
	assert.False(t, withServer, "ask_user: false starts no MCP server: %v", never)
	assert.NotContains(t, allowed, AskUserTool)
	assert.Contains(t, never, "--strict-mcp-config", "no server of the CLI's own configuration starts either")

	v := &cliexec.Visit{Dir: t.TempDir()}
	assert.Nil(t, e.CLI.Spec(context.Background(), agent.Request{Settings: agent.Settings{NoAskUser: true}}, v).Stop,
		"no ask_user record to watch")
	noServer := New(Options{Options: cliexec.Options{Model: "m1"}})
	assert.Equal(t, noServer.Fingerprint(agent.Request{}), e.Fingerprint(agent.Request{Settings: agent.Settings{NoAskUser: true}}),
		"the conversation is one without the tool")
	assert.NotEqual(t, e.Fingerprint(agent.Request{}), e.Fingerprint(agent.Request{Settings: agent.Settings{NoAskUser: true}}))
}

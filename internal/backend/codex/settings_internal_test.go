package codex

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/clitest"
)

// configs returns the -c values of argv.
func configs(argv []string) []string {
	var out []string
	for i, a := range argv {
		if a == "-c" && i+1 < len(argv) {
			out = append(out, argv[i+1])
		}
	}
	return out
}

func TestPermissionsMapToSandbox(t *testing.T) {
	e := (Options{Sandbox: "read-only"})
	for level, want := range map[string]string{"": "read-only", agent.PermissionReadOnly: "read-only", agent.PermissionEdit: "workspace-write"} {
		got, _ := clitest.Flag(clitest.Argv(t, New(e), agent.Settings{Permissions: level}), "-s")
		assert.Equal(t, want, got, "permissions %q", level)
	}
	full := clitest.Argv(t, New(e), agent.Settings{Permissions: agent.PermissionFull})
	assert.Contains(t, full, "--dangerously-bypass-approvals-and-sandbox")
	assert.NotContains(t, full, "-s")
	ro := clitest.Argv(t, New(Options{Bypass: true}), agent.Settings{Permissions: agent.PermissionReadOnly})
	assert.NotContains(t, ro, "--dangerously-bypass-approvals-and-sandbox", "a node's read-only wins over the worker's bypass")
	got, _ := clitest.Flag(ro, "-s")
	assert.Equal(t, "read-only", got)
}

func TestPromptsMapToInstructions(t *testing.T) {
	e := (Options{DeveloperInstructions: "worker dev"})
	assert.Contains(t, configs(clitest.Argv(t, New(e), agent.Settings{})), `developer_instructions="worker dev"`)
	a := clitest.Argv(t, New(e), agent.Settings{SystemPrompt: "node base", AppendSystemPrompt: "node dev"})
	cs := configs(a)
	assert.Contains(t, cs, `developer_instructions="node dev"`)
	i := slices.IndexFunc(cs, func(c string) bool { return strings.HasPrefix(c, "model_instructions_file=") })
	require.GreaterOrEqual(t, i, 0, "system_prompt becomes model_instructions_file: %v", cs)
	path := strings.Trim(strings.TrimPrefix(cs[i], "model_instructions_file="), `"`)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "node base", string(b))
}

func TestEnvIsBasePlusNamedVariables(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "worker-key")
	t.Setenv("TETHER_TEST_NODE", "n")
	e, c := drv(Options{Options: cliexec.Options{APIKey: "k"}})
	req := agent.Request{Settings: agent.Settings{Env: []string{"TETHER_TEST_NODE"}}, Env: agent.Env{StateRoot: "/r"}}
	env := c.Environ(req, e.env(c, req, &cliexec.Visit{APIKey: "k"})...)
	assert.Contains(t, env, "TETHER_TEST_NODE=n")
	assert.Contains(t, env, "CODEX_HOME=/r")
	assert.Contains(t, env, APIKeyVar+"=k")
	for _, kv := range env {
		assert.False(t, strings.HasPrefix(kv, "OPENAI_API_KEY="), "the worker's key variable is not passed on by name")
	}
	// Without a key of its own the executor passes none: it never reads
	// the worker's environment for one.
	d, c := drv(Options{})
	assert.Contains(t, d.env(c, agent.Request{Env: agent.Env{StateRoot: "/r"}}, &cliexec.Visit{}), APIKeyVar+"=")
}

func TestFingerprintFollowsSettings(t *testing.T) {
	e := New(Options{Options: cliexec.Options{Model: "m1"}})
	seen := clitest.DistinctFingerprints(t, e, map[string]agent.Settings{
		"read-only": {Permissions: agent.PermissionReadOnly},
		"edit":      {Permissions: agent.PermissionEdit},
		"full":      {Permissions: agent.PermissionFull},
		"system":    {SystemPrompt: "x"},
		"append":    {AppendSystemPrompt: "x"},
	})
	assert.Equal(t, New(Options{Options: cliexec.Options{Model: "m1"}, Bypass: true}).Fingerprint(agent.Request{}), seen["full"])
	ww := New(Options{Options: cliexec.Options{Model: "m1"}, Sandbox: "workspace-write"})
	assert.NotEqual(t, ww.Fingerprint(agent.Request{}), New(Options{Options: cliexec.Options{Model: "m1"}, Bypass: true}).Fingerprint(agent.Request{}))
	assert.NotEqual(t, ww.Fingerprint(agent.Request{}), New(Options{Options: cliexec.Options{Model: "m1"}, Sandbox: "workspace-write", DeveloperInstructions: "x"}).Fingerprint(agent.Request{}))
}

// drv is the driver of the executor of o (its options, defaults filled)
// and the executor's CLI, for the driver's own methods.
func drv(o Options) (Options, *cliexec.CLI) {
	e := New(o)
	return e.Driver.(Options), &e.CLI
}

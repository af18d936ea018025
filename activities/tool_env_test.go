package activities

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
)

// A tool sees the minimal base environment plus the names its node and
// the worker's pass list (TETHER_PASS_ENV) pass, never the rest of the
// worker's environment.
func TestRunToolEnvironment(t *testing.T) {
	t.Setenv("TETHER_TEST_SECRET", "s3cret")
	t.Setenv("TETHER_TEST_NODE", "from-node")
	t.Setenv("TETHER_TEST_WORKER", "from-worker")
	// The pass list is the worker's configuration, handed to Activities:
	// the variable itself is read once, by internal/config, not here.
	t.Setenv("TETHER_PASS_ENV", "TETHER_TEST_SECRET")
	a := newActs(t, blob.NewMem())
	a.PassEnv = []string{"TETHER_TEST_WORKER"}
	tool := graph.Node{ID: "t", Kind: graph.KindTool, Run: []string{"env"}, Env: []string{"TETHER_TEST_NODE"}}
	out, err := a.RunTool(context.Background(), &ToolRequest{RunID: "r1", NodeID: "t", Node: tool})
	require.NoError(t, err)
	env := out["stdout"].(string)
	assert.Contains(t, env, "TETHER_TEST_NODE=from-node\n")
	assert.Contains(t, env, "TETHER_TEST_WORKER=from-worker\n")
	assert.Contains(t, env, "PATH=")
	assert.False(t, strings.Contains(env, "s3cret"), "a variable nobody named stays with the worker:\n%s", env)
}

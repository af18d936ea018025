package claude_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/claude"
	"github.com/tether-run/tether/internal/backend/clitest"
)

func TestClaudeCode(t *testing.T) {
	clitest.Run(t, clitest.Suite{
		Backend:        claude.Configured,
		SessionGlob:    "projects/*/{id}.jsonl",
		MissingID:      "0b7e2b8e-6d0f-4c55-9d0a-2a4b7c1e9f00",
		AskUserTool:    claude.AskUserTool,
		PendingPrefix:  "toolu_",
		ReadOnlyDenial: "Permission to use",
	})
}

// TestBypassPermissions runs with bypassPermissions; as root this works only
// because the executor sets IS_SANDBOX=1.
func TestBypassPermissions(t *testing.T) {
	ex := claude.New(claude.Options{Options: clitest.NewHarness(t).For(claude.Name), PermissionMode: "bypassPermissions"})
	res, err := ex.Execute(context.Background(), agent.Request{Prompt: "alpha", Env: clitest.NewEnv(t)})
	require.NoError(t, err)
	assert.Equal(t, "turn 1: alpha", res.Text)
}

// TestPackerFindsWhatTheCLIWrote checks the packer's project slug against
// the real CLI for working directories that stress it: over 200 characters
// (cut plus hash), and with characters outside ASCII and outside the BMP.
func TestPackerFindsWhatTheCLIWrote(t *testing.T) {
	ex := claude.New(claude.Options{Options: clitest.NewHarness(t).For(claude.Name)})
	long := strings.Repeat("d_abcdefghij.k/", 16)
	for name, sub := range map[string]string{
		"long":    long,
		"unicode": "caf\u00e9 \U0001F600 \u4e2d",
		"longuni": strings.Repeat("\u00e9\U0001F600x/", 60),
	} {
		t.Run(name, func(t *testing.T) {
			env := clitest.NewEnv(t)
			env.Workdir = filepath.Join(env.Workdir, sub)
			require.NoError(t, os.MkdirAll(env.Workdir, 0o755))
			res, err := ex.Execute(context.Background(), agent.Request{Prompt: "alpha", Env: env})
			require.NoError(t, err)
			ents, _ := os.ReadDir(filepath.Join(env.StateRoot, "projects"))
			for _, e := range ents {
				t.Logf("CLI slug (%d chars): %s", len(e.Name()), e.Name())
			}
			assert.True(t, ex.Packer(env).HasSession(context.Background(), res.SessionID),
				"the packer finds the session the CLI wrote for %q", env.Workdir)
		})
	}
}

// A model Claude Code has a list price for is priced, and the visit's cost
// is known: the price of its own calls only, also on a resumed
// conversation, whose running total the CLI carries on.
func TestCostFromListPrice(t *testing.T) {
	o := clitest.NewHarness(t).For(claude.Name)
	o.Model = "claude-sonnet-4-5"
	ex := claude.New(claude.Options{Options: o})
	env := clitest.NewEnv(t)
	first, err := ex.Execute(context.Background(), agent.Request{Prompt: "alpha", Env: env})
	require.NoError(t, err)
	// $3 per million input tokens, $15 output, $3.75 cache writes, $0.30 cache reads.
	assert.Equal(t, agent.Usage{InputTokens: 20, OutputTokens: 8, CacheWriteTokens: 1000, CostKnown: true, CostUSD: first.Usage.CostUSD}, first.Usage)
	assert.InDelta(t, (20*3+8*15+1000*3.75)/1e6, first.Usage.CostUSD, 1e-12)

	second, err := ex.Execute(context.Background(), agent.Request{Prompt: "beta", SessionID: first.SessionID, Env: env})
	require.NoError(t, err)
	assert.True(t, second.Usage.CostKnown)
	assert.InDelta(t, (40*3+10*15+1000*0.30)/1e6, second.Usage.CostUSD, 1e-12)
}

package codex_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/codex"
	"github.com/tether-run/tether/internal/fakemodel"
)

func TestCodex(t *testing.T) {
	clitest.Run(t, clitest.Suite{
		Backend:        codex.Configured,
		SessionGlob:    "sessions/*/*/*/rollout-*-{id}.jsonl",
		MissingID:      "01a22c70-0000-7000-8000-000000000000",
		AskUserTool:    codex.AskUserNamespace + "\x00ask_user",
		PendingPrefix:  "call_",
		ReadOnlyDenial: "blocked by read-only sandbox",
	})
}

// The worker follows the rollout while Codex runs (for the visit's
// tokens): an agent that swaps it for a link to /dev/zero mid-visit, with
// Codex's own shell tool, fails its visit with the typed error; the
// worker never reads the link.
func TestRolloutSwappedMidVisitIsRefused(t *testing.T) {
	h := clitest.NewHarness(t)
	b := codex.Configured(h.For(codex.Name))
	env := clitest.NewEnv(t)
	swap := fmt.Sprintf(`for f in %s/sessions/*/*/*/rollout-*.jsonl; do rm "$f"; ln -s /dev/zero "$f"; done`, env.StateRoot)
	_, err := b.Execute(context.Background(), agent.Request{Prompt: fakemodel.CueShell + " " + swap, Env: env,
		Settings: agent.Settings{Permissions: agent.PermissionFull}})
	require.ErrorIs(t, err, agent.ErrUnsafeFile)
	links, _ := filepath.Glob(filepath.Join(env.StateRoot, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	require.NotEmpty(t, links, "the agent's command ran")
	fi, err := os.Lstat(links[0])
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink)
}

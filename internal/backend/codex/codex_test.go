package codex_test

import (
	"testing"

	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/codex"
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

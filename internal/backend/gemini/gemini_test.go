package gemini_test

import (
	"testing"

	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/gemini"
)

func TestGemini(t *testing.T) {
	clitest.Run(t, clitest.Suite{
		Backend:            gemini.Configured,
		SessionGlob:        gemini.ChatsDir + "/session-*-{id8}.jsonl",
		MissingID:          "0badf00d-0000-4000-8000-000000000000",
		HiddenWhenReadOnly: []string{"write_file", "replace", "run_shell_command"},
	})
}

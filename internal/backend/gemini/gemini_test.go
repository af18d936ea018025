package gemini_test

import (
	"testing"

	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/gemini"
)

func TestGemini(t *testing.T) {
	clitest.Run(t, clitest.Suite{
		Backend:            gemini.Configured,
		HiddenWhenReadOnly: []string{"write_file", "replace", "run_shell_command"},
	})
}

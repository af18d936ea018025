package opencode_test

import (
	"testing"

	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/opencode"
)

func TestOpencode(t *testing.T) {
	clitest.Run(t, clitest.Suite{
		Backend:            opencode.Configured,
		SessionGlob:        opencode.SessionsDir + "/{id}.json",
		MissingID:          "ses_0badf00d0000000000000000aa",
		AskUserTool:        opencode.AskUserTool,
		PendingPrefix:      "call_",
		HiddenWhenReadOnly: []string{"write", "edit", "bash"},
	})
}

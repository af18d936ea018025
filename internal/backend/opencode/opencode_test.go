package opencode_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/opencode"
	"github.com/tether-run/tether/internal/fakemodel"
)

var suite = clitest.Suite{
	New: func(h *clitest.Harness) agent.Backend {
		return opencode.New(opencode.Options{Options: h.Options(h.Fake.URL()+"/v1", "fake-opencode-1")})
	},
	HasSessionFiles: func(env agent.Env, id string) bool {
		_, err := os.Stat(filepath.Join(env.StateRoot, opencode.SessionsDir, id+".json"))
		return err == nil
	},
	MissingID:          "ses_0badf00d0000000000000000aa",
	AskUserTool:        opencode.AskUserTool,
	PendingPrefix:      "call_",
	HiddenWhenReadOnly: []string{"write", "edit", "bash"},
	Wire:               fakemodel.Chat,
}

func TestOpencode(t *testing.T) { clitest.Run(t, suite) }

func TestFingerprint(t *testing.T) {
	a := opencode.New(opencode.Options{Options: cliexec.Options{BaseURL: "http://a", Model: "m1"}})
	assert.Equal(t, a.Fingerprint(agent.Request{}), opencode.New(opencode.Options{Options: cliexec.Options{BaseURL: "http://b", Model: "m1", Timeout: time.Hour}}).Fingerprint(agent.Request{}))
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), a.Fingerprint(agent.Request{Model: "m2"}))
	clitest.DistinctFingerprints(t, a, map[string]agent.Settings{
		"read-only":            {Permissions: agent.PermissionReadOnly},
		"edit":                 {Permissions: agent.PermissionEdit},
		"full":                 {Permissions: agent.PermissionFull},
		"tools":                {Tools: []string{"read"}},
		"disallowed_tools":     {DisallowedTools: []string{"bash"}},
		"system_prompt":        {SystemPrompt: "be brief"},
		"append_system_prompt": {AppendSystemPrompt: "and kind"},
	})
}

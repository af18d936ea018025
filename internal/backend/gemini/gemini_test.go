package gemini_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/gemini"
	"github.com/tether-run/tether/internal/fakemodel"
)

var suite = clitest.Suite{
	New: func(h *clitest.Harness) agent.Backend {
		return gemini.New(gemini.Options{Options: h.Options(h.Fake.URL(), "fake-gemini-1"), AskUserConvention: true})
	},
	HasSessionFiles: func(env agent.Env, id string) bool {
		m, _ := filepath.Glob(filepath.Join(env.StateRoot, filepath.FromSlash(gemini.ChatsDir), "session-*-"+id[:8]+".jsonl"))
		return len(m) == 1
	},
	MissingID:          "0badf00d-0000-4000-8000-000000000000",
	HiddenWhenReadOnly: []string{"write_file", "replace", "run_shell_command"},
	Wire:               fakemodel.Gemini,
}

func TestGemini(t *testing.T) { clitest.Run(t, suite) }

func TestFingerprint(t *testing.T) {
	a := gemini.New(gemini.Options{Options: cliexec.Options{BaseURL: "http://a", Model: "m1"}})
	assert.Equal(t, a.Fingerprint(agent.Request{}), gemini.New(gemini.Options{Options: cliexec.Options{BaseURL: "http://b", Model: "m1", Timeout: time.Hour}}).Fingerprint(agent.Request{}))
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), a.Fingerprint(agent.Request{Model: "m2"}))
	clitest.DistinctFingerprints(t, a, map[string]agent.Settings{
		"read-only":            {Permissions: agent.PermissionReadOnly},
		"edit":                 {Permissions: agent.PermissionEdit},
		"full":                 {Permissions: agent.PermissionFull},
		"tools":                {Tools: []string{"read_file"}},
		"disallowed_tools":     {DisallowedTools: []string{"run_shell_command"}},
		"system_prompt":        {SystemPrompt: "be brief"},
		"append_system_prompt": {AppendSystemPrompt: "and kind"},
	})
}

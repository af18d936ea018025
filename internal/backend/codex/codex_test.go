package codex_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/codex"
	"github.com/tether-run/tether/internal/fakemodel"
)

var suite = clitest.Suite{
	New: func(h *clitest.Harness) agent.Backend {
		return codex.New(codex.Options{
			BinDir:         h.BinDir,
			BaseURL:        h.Fake.URL() + "/v1",
			APIKey:         "sk-fake",
			Model:          "fake-codex-1",
			AskUser:        h.AskUser,
			Timeout:        h.Timeout,
			Heartbeat:      h.Heartbeat,
			HeartbeatEvery: h.HeartbeatEvery,
			AskUserGrace:   h.AskUserGrace,
			TempDir:        h.Scratch,
		})
	},
	HasSessionFiles: func(env agent.Env, id string) bool {
		m, _ := filepath.Glob(filepath.Join(env.StateRoot, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
		return len(m) == 1
	},
	MissingID:      "01a22c70-0000-7000-8000-000000000000",
	AskUserTool:    codex.AskUserNamespace + "\x00ask_user",
	PendingPrefix:  "call_",
	ReadOnlyDenial: "blocked by read-only sandbox",
	Wire:           fakemodel.Responses,
}

func TestCodex(t *testing.T) { clitest.Run(t, suite) }

func TestFingerprint(t *testing.T) {
	a := codex.New(codex.Options{Model: "m1", Sandbox: "workspace-write"})
	assert.Equal(t, a.Fingerprint(agent.Request{}), codex.New(codex.Options{Model: "m1", Sandbox: "workspace-write", BaseURL: "http://x", Timeout: time.Hour}).Fingerprint(agent.Request{}))
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), a.Fingerprint(agent.Request{Model: "m2"}))
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), codex.New(codex.Options{Model: "m1", Bypass: true}).Fingerprint(agent.Request{}))
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), codex.New(codex.Options{Model: "m1", Sandbox: "workspace-write", DeveloperInstructions: "x"}).Fingerprint(agent.Request{}))
}

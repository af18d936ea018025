package codex_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/codex"
	"github.com/tether-run/tether/internal/fakemodel"
)

var suite = clitest.Suite{
	New: func(h *clitest.Harness) agent.Backend {
		return codex.New(codex.Options{Options: h.Options(h.Fake.URL()+"/v1", "fake-codex-1")})
	},
	HasSessionFiles: func(env agent.Env, id string) bool {
		m, _ := filepath.Glob(filepath.Join(env.StateRoot, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
		return len(m) == 1
	},
	MissingID:     "01a22c70-0000-7000-8000-000000000000",
	AskUserTool:   codex.AskUserNamespace + "\x00ask_user",
	PendingPrefix: "call_",
	// The suite runs Codex under the worker's sandbox, which stands in
	// for Codex's own (docs/security.md): the working directory is
	// read-only there, and the write fails on it.
	ReadOnlyDenial: "Failed to write file",
	Wire:           fakemodel.Responses,
}

func TestCodex(t *testing.T) { clitest.Run(t, suite) }

func TestFingerprint(t *testing.T) {
	a := codex.New(codex.Options{Options: cliexec.Options{Model: "m1"}, Sandbox: "workspace-write"})
	assert.Equal(t, a.Fingerprint(agent.Request{}), codex.New(codex.Options{Options: cliexec.Options{Model: "m1", BaseURL: "http://x", Timeout: time.Hour}, Sandbox: "workspace-write"}).Fingerprint(agent.Request{}))
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), a.Fingerprint(agent.Request{Model: "m2"}))
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), codex.New(codex.Options{Options: cliexec.Options{Model: "m1"}, Bypass: true}).Fingerprint(agent.Request{}))
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), codex.New(codex.Options{Options: cliexec.Options{Model: "m1"}, Sandbox: "workspace-write", DeveloperInstructions: "x"}).Fingerprint(agent.Request{}))
}

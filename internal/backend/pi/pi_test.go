package pi_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/pi"
)

var suite = clitest.Suite{
	New: func(h *clitest.Harness) backend.Backend {
		return pi.New(pi.Options{
			BinDir:         h.BinDir,
			BaseURL:        h.Fake.URL() + "/v1",
			APIKey:         "sk-fake",
			Model:          "fake-pi-1",
			AskUser:        true,
			Timeout:        h.Timeout,
			Heartbeat:      h.Heartbeat,
			HeartbeatEvery: h.HeartbeatEvery,
			TempDir:        h.Scratch,
		})
	},
	HasSessionFiles: func(env backend.Env, id string) bool {
		m, _ := filepath.Glob(filepath.Join(env.StateRoot, "*_"+id+".jsonl"))
		return len(m) == 1
	},
	MissingID:          "01a22c71-0000-7000-8000-000000000000",
	HiddenWhenReadOnly: []string{"write", "edit", "bash"},
}

func TestPi(t *testing.T) { clitest.Run(t, suite) }

func TestFingerprint(t *testing.T) {
	a := pi.New(pi.Options{BaseURL: "http://a/v1", Model: "m1", AskUser: true})
	assert.Equal(t, a.Fingerprint(backend.Request{}), pi.New(pi.Options{BaseURL: "http://b/v1", Model: "m1", AskUser: true, Timeout: time.Hour}).Fingerprint(backend.Request{}))
	assert.NotEqual(t, a.Fingerprint(backend.Request{}), a.Fingerprint(backend.Request{Model: "m2"}))
	assert.NotEqual(t, a.Fingerprint(backend.Request{}), pi.New(pi.Options{BaseURL: "http://a/v1", Model: "m1"}).Fingerprint(backend.Request{}))
	assert.NotEqual(t, a.Fingerprint(backend.Request{}), pi.New(pi.Options{BaseURL: "http://a/v1", Model: "m1", AskUser: true, Tools: []string{}}).Fingerprint(backend.Request{}))
}

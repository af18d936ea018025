package pi_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/backend/pi"
	"github.com/tether-run/tether/internal/fakemodel"
)

var suite = clitest.Suite{
	New: func(h *clitest.Harness) agent.Backend {
		return pi.New(pi.Options{Options: h.Options(h.Fake.URL()+"/v1", "fake-pi-1"), AskUserConvention: true})
	},
	HasSessionFiles: func(env agent.Env, id string) bool {
		m, _ := filepath.Glob(filepath.Join(env.StateRoot, "*_"+id+".jsonl"))
		return len(m) == 1
	},
	MissingID:          "01a22c71-0000-7000-8000-000000000000",
	HiddenWhenReadOnly: []string{"write", "edit", "bash"},
	Wire:               fakemodel.Chat,
}

func TestPi(t *testing.T) { clitest.Run(t, suite) }

func TestFingerprint(t *testing.T) {
	a := pi.New(pi.Options{Options: cliexec.Options{BaseURL: "http://a/v1", Model: "m1"}, AskUserConvention: true})
	assert.Equal(t, a.Fingerprint(agent.Request{}), pi.New(pi.Options{Options: cliexec.Options{BaseURL: "http://b/v1", Model: "m1", Timeout: time.Hour}, AskUserConvention: true}).Fingerprint(agent.Request{}))
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), a.Fingerprint(agent.Request{Model: "m2"}))
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), pi.New(pi.Options{Options: cliexec.Options{BaseURL: "http://a/v1", Model: "m1"}}).Fingerprint(agent.Request{}))
	assert.NotEqual(t, a.Fingerprint(agent.Request{}), pi.New(pi.Options{Options: cliexec.Options{BaseURL: "http://a/v1", Model: "m1"}, AskUserConvention: true, Tools: []string{}}).Fingerprint(agent.Request{}))
}

// With the model's price given, pi prices every call and the visit's cost
// is known: the sum over its calls at those rates.
func TestCostFromConfiguredPrice(t *testing.T) {
	bin := clitest.Isolate(t)
	fake := fakemodel.Start(t)
	ex := pi.New(pi.Options{Options: cliexec.Options{BinDir: bin, BaseURL: fake.URL() + "/v1", APIKey: "k", Model: "fake-pi-1", Timeout: time.Minute, TempDir: t.TempDir()}, Cost: &pi.Cost{Input: 2, Output: 8, CacheRead: 0.5}})
	env := clitest.NewEnv(t)
	first, err := ex.Execute(context.Background(), agent.Request{Prompt: "alpha", Env: env})
	require.NoError(t, err)
	assert.True(t, first.Usage.CostKnown)
	assert.InDelta(t, (1020*2+8*8)/1e6, first.Usage.CostUSD, 1e-12)

	second, err := ex.Execute(context.Background(), agent.Request{Prompt: "beta", SessionID: first.SessionID, Env: env})
	require.NoError(t, err)
	assert.Equal(t, int64(1000), second.Usage.CacheReadTokens)
	assert.True(t, second.Usage.CostKnown)
	assert.InDelta(t, (40*2+10*8+1000*0.5)/1e6, second.Usage.CostUSD, 1e-12, "only the second visit's calls")
}

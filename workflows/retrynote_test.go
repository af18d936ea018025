package workflows

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
)

// A failure that may pass carries what its attempt did; the next one is
// told that, on top of what was lost before.
func TestLostFactsFromAFailureThatMayPass(t *testing.T) {
	p := agent.Progress{Node: "check", Visit: 1, Backend: "tool", Activity: "sh -c deploy", Elapsed: 3 * time.Second}
	err := temporal.NewNonRetryableApplicationError("snapshot: put failed", activities.ErrTypeMayPass, errors.New("put failed"), p)
	before := &agent.Interruption{Attempts: 2}
	i := lostFacts(err, before, false)
	assert.Equal(t, 3, i.Attempts)
	assert.True(t, i.Started)
	assert.Equal(t, 3*time.Second, i.Elapsed)
	assert.Equal(t, []string{"sh -c deploy"}, i.Calls)
	assert.Contains(t, i.Cause, "it failed: snapshot: put failed")

	stopping := temporal.NewApplicationError("worker w stopped", activities.ErrTypeWorkerStopping, nil)
	i = lostFacts(stopping, nil, false)
	assert.Equal(t, 1, i.Attempts)
	assert.False(t, i.Started, "no details: what it did is not known")
	assert.Equal(t, "its worker was shut down", i.Cause)
}

package activities

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/temporal"
)

// A chain built the way errors crossed layers, each message holding the
// one below, reads with each cause once and no envelope.
func TestErrorTextSaysEachCauseOnce(t *testing.T) {
	root := fmt.Errorf("get credentials: %w", errors.New("no EC2 IMDS role found"))
	act := temporal.NewNonRetryableApplicationError(root.Error(), ErrTypeMayPass, root)
	old := temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent node %q (visit 1): %v", "writer", act), "NodeFailed", act)
	assert.Greater(t, strings.Count(old.Error(), "no EC2 IMDS role found"), 3, "each layer's Error() repeats the one below")
	// Each layer's message built from ErrorText of the one below.
	act = temporal.NewNonRetryableApplicationError(ErrorText(root), ErrTypeMayPass, root)
	node := temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent node %q (visit 1): %s", "writer", ErrorText(act)), "NodeFailed", act)
	got := ErrorText(node)
	assert.Equal(t, `agent node "writer" (visit 1): get credentials: no EC2 IMDS role found`, got)
	assert.Equal(t, 1, strings.Count(got, "no EC2 IMDS role found"), got)
	assert.NotContains(t, got, "(type:")
	assert.NotContains(t, got, "retryable")

	wrapped := temporal.NewApplicationErrorWithCause("worker w1 stopped", ErrTypeWorkerStopping, errors.New("context canceled"))
	assert.Equal(t, "worker w1 stopped: context canceled", ErrorText(wrapped))
	assert.Equal(t, "", ErrorText(nil))
}

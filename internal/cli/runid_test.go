package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/runstore"
)

func TestNewRunIDIsAValidRunID(t *testing.T) {
	for _, name := range []string{"Review Loop", "", "..", "ünïcode graph/with slashes", "a-very-long-graph-name-that-goes-on-and-on-and-on"} {
		id := newRunID(name)
		require.NoError(t, runstore.ValidateRunID(id), id)
	}
	assert.Regexp(t, `^review-loop-[0-9a-z]{26}$`, newRunID("Review Loop"))
}

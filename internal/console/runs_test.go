package console

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHideKeys: an error a page shows names no blob key of the store, and
// keeps the console's own addresses.
func TestHideKeys(t *testing.T) {
	for in, want := range map[string]string{
		`runs/r1/sessions/w/01J00000000000000000000BEN: packer: archive digest does not match`: `a blob of the run: packer: archive digest does not match`,
		`read "runs/r1/checkpoints/000007.json.zst": not found`:                                `read "a blob of the run": not found`,
		`get runs/r-2/workspace/pack-ab12 (attempt 3): timeout`:                                `get a blob of the run (attempt 3): timeout`,
		`/runs/r1/visits/w/1 is not a visit's address: /runs/RUN/visits/NODE/N`:                `/runs/r1/visits/w/1 is not a visit's address: /runs/RUN/visits/NODE/N`,
	} {
		assert.Equal(t, want, hideKeys(in))
	}
}

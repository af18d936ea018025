package workerhost

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend"
)

// The catalogue and the worker's backends are one registry: every backend
// the catalogue says this build runs has an executor on the worker, no
// executor is missing from the catalogue, and a backend has the persist
// capability exactly when it has a session packer.
func TestCatalogueAndWorkerBackendsAgree(t *testing.T) {
	bs, err := NewBackends(BackendConfig{})
	require.NoError(t, err)
	var names []string
	for _, b := range bs {
		names = append(names, b.Name())
		info, ok := backend.Lookup(b.Name())
		require.True(t, ok, "%s is not in the catalogue", b.Name())
		assert.True(t, info.Implemented, "%s runs but the catalogue says it is not implemented", b.Name())
		env := agent.Env{StateRoot: t.TempDir(), Workdir: t.TempDir()}
		assert.Equal(t, info.Persist, b.Packer(env) != nil, "%s: persist capability and packer disagree", b.Name())
	}
	assert.ElementsMatch(t, backend.Implemented(), names)
}

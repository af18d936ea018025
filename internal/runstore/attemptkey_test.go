package runstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAttemptKey(t *testing.T) {
	const id = "01JDQ7ZK3M4N5P6Q7R8S9T0V1W"
	for _, key := range []string{SessionKey("run-1", "writer", id), PauseKey("run-1", "writer", id)} {
		require.NotEmpty(t, key)
		require.Equal(t, key, AttemptKey(key, 1), "the first attempt packs where the workflow said")
		require.Equal(t, key, AttemptKey(key, 0))
		seen := map[string]bool{key: true}
		for a := int32(2); a <= 12; a++ {
			k := AttemptKey(key, a)
			require.Equal(t, k, AttemptKey(key, a), "deterministic")
			require.False(t, seen[k], "attempt %d reuses a key: %s", a, k)
			seen[k] = true
			dir, name, ok := cutLast(k)
			require.True(t, ok)
			require.True(t, strings.HasPrefix(key, dir+"/"), "same node and kind: %s", k)
			require.True(t, validSessionID(name), "still a ULID-shaped id: %s", name)
			require.Equal(t, id[:10], name[:10], "keeps the ULID's time")
			require.True(t, strings.HasPrefix(k, RunPrefix("run-1")), "inside the run, so delete removes it")
		}
	}
	for _, other := range []string{"", "runs/r/checkpoints/00000000000000000001.json", WorkspacePackKey("r", strings.Repeat("a", 64)), "no-slash"} {
		require.Equal(t, other, AttemptKey(other, 3), "not a session key: unchanged")
	}
}

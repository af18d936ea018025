package memory_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/contracttest"
	"github.com/tether-run/tether/internal/sessionlog/memory"
)

func TestContract(t *testing.T) {
	contracttest.Run(t, func(t *testing.T) *contracttest.Harness {
		store := memory.New()
		return &contracttest.Harness{
			Open: func(*testing.T) (sessionlog.Storage, error) { return store, nil },
			Tear: func(t *testing.T, id string, e sessionlog.Event) { require.NoError(t, store.Tear(id, e)) },
			Corrupt: func(t *testing.T, id string, seq int64) {
				require.NoError(t, store.Corrupt(id, int(seq-1), []byte(`{"seq":`)))
			},
			Intercept: memory.Intercept,
			PutRaw: func(_ *testing.T, id, _ string, header []byte, events [][]byte) {
				store.PutRaw(id, header, events)
			},
			Snapshot: func(*testing.T) []byte { return store.Snapshot() },
		}
	})
}

package contracttest

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
)

// Close waits for an append that is inside the backend, blocked on a gate
// before one of its writes, and that append is durable once Close returns:
// both for the first batch, which creates the log, and for a later one.
func testCloseDrains(t *testing.T, h *Harness) {
	for _, tc := range []struct {
		name   string
		before []string // appended before the one held in flight
	}{
		{"FirstBatch", nil},
		{"LaterBatch", []string{"earlier"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "drain-" + tc.name
			st, err := h.Open(t)
			require.NoError(t, err)
			var armed atomic.Bool
			entered := make(chan string, 1)
			gate := make(chan struct{})
			release := sync.OnceFunc(func() { close(gate) })
			defer release() // a failure must not leave the backend held
			h.Intercept(st, func(op string) error {
				if armed.CompareAndSwap(true, false) {
					entered <- op
					<-gate
				}
				return nil
			})
			defer h.Intercept(st, nil)
			c := sessionlog.NewCoordinator(st)
			require.NoError(t, c.Create(ctx, header(id, "")))
			for _, text := range tc.before {
				require.NoError(t, c.Append(ctx, id, sessionlog.Message(sessionlog.RoleUser, text)))
			}

			armed.Store(true)
			appended := make(chan error, 1)
			go func() { appended <- c.Append(ctx, id, sessionlog.Message(sessionlog.RoleUser, "in flight")) }()
			op := <-entered // the append is inside the backend, held before op
			closed := make(chan error, 1)
			go func() { closed <- c.Close() }()
			// Close has begun once it refuses new calls (an empty append
			// touches no storage).
			for c.Append(ctx, id) == nil {
				runtime.Gosched()
			}
			require.ErrorIs(t, c.Append(ctx, id), sessionlog.ErrClosed)
			select {
			case err := <-closed:
				t.Fatalf("Close returned (%v) while an append was held inside the backend before %q", err, op)
			case err := <-appended:
				t.Fatalf("the held append returned (%v) before its write was released", err)
			default:
			}
			release()
			require.NoError(t, <-closed)

			// Durable when Close returned: a new process reads it.
			c2 := open(t, h)
			log, err := c2.Load(ctx, id)
			require.NoError(t, err, "the drained append must have created the log")
			var texts []string
			for _, e := range log.Events {
				texts = append(texts, e.Text)
			}
			require.Equal(t, append(tc.before, "in flight"), texts)
			require.NoError(t, <-appended, "the drained append is acknowledged")
		})
	}
}

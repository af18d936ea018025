package contracttest

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
)

// injected is the error an intercepted operation fails with.
func injected(op string, errno syscall.Errno) error {
	return fmt.Errorf("injected: %w", &fs.PathError{Op: op, Path: "/injected", Err: errno})
}

// failAt makes st fail its step-th intercepted operation (counted from 1)
// with errno. The returned func reports the operation that failed, "" if
// none did yet.
func failAt(h *Harness, st sessionlog.Storage, step int, errno syscall.Errno) (fired func() string) {
	n, op := 0, ""
	h.Intercept(st, func(o string) error {
		n++
		if n != step {
			return nil
		}
		op = o
		return injected(o, errno)
	})
	return func() string { return op }
}

// numbered sets the sequence numbers Append would assign.
func numbered(events ...sessionlog.Event) []sessionlog.Event {
	out := make([]sessionlog.Event, len(events))
	for i, e := range events {
		e.Seq = int64(i + 1)
		out[i] = e
	}
	return out
}

// requireSameEvents compares events by their stored form, the one thing
// every backend keeps.
func requireSameEvents(t *testing.T, want, got []sessionlog.Event, msgAndArgs ...any) {
	t.Helper()
	enc := func(events []sessionlog.Event) []string {
		out := make([]string, len(events))
		for i, e := range events {
			b, err := sessionlog.EncodeEvent(e)
			require.NoError(t, err)
			out[i] = string(b)
		}
		return out
	}
	require.Equal(t, enc(want), enc(got), msgAndArgs...)
}

// firstBatch is one whole turn, the kind of batch that creates a log.
func firstBatch() []sessionlog.Event {
	return numbered(
		sessionlog.TurnStart(),
		sessionlog.Message(sessionlog.RoleUser, "build it"),
		sessionlog.StepStart(),
		sessionlog.ToolCall("t1", "build", map[string]any{"target": "all"}),
		sessionlog.ToolResult("t1", "ok", false),
		sessionlog.StepEnd(),
		sessionlog.Message(sessionlog.RoleAssistant, "built"),
		sessionlog.TurnEnd(sessionlog.ReasonCompleted, ""),
	)
}

// The first batch creates the log: a crash or a failed write at any point
// of it leaves either no log at all or the header with every event of the
// batch, never a header alone or part of the batch.
func testFirstBatchAtomic(t *testing.T, h *Harness) {
	batch := firstBatch()
	t.Run("InjectedFault", func(t *testing.T) {
		step := 1
		for ; ; step++ {
			hd := header(fmt.Sprintf("fault-%d", step), "/w")
			hd.FormatVersion = sessionlog.FormatVersion
			st, err := h.Open(t)
			require.NoError(t, err)
			fired := failAt(h, st, step, syscall.EIO)
			c := sessionlog.NewCoordinator(st)
			require.NoError(t, c.Create(ctx, hd))
			err = c.Append(ctx, hd.ID, batch...)
			h.Intercept(st, nil)
			require.NoError(t, c.Close())
			if fired() == "" {
				require.NoError(t, err)
				require.True(t, requireNothingOrWhole(t, h, hd, batch, "a batch that committed"))
				break
			}
			t.Logf("operation %d (%s) failed", step, fired())
			requireFault(t, err, syscall.EIO, "a first batch failing at "+fired())
			requireNothingOrWhole(t, h, hd, batch, fmt.Sprintf("a fault at operation %d (%s)", step, fired()))
		}
		require.Greater(t, step, 1, "the first batch made no intercepted operation")
	})
	t.Run("ProcessKilled", func(t *testing.T) {
		if h.Crash == nil {
			t.Skip("this storage does not outlive its process")
		}
		step := 1
		for ; ; step++ {
			hd := header(fmt.Sprintf("crash-%d", step), "/w")
			hd.FormatVersion = sessionlog.FormatVersion
			killed := h.Crash(t, sessionlog.Batch{Header: hd, Materialize: true, Events: batch}, step)
			whole := requireNothingOrWhole(t, h, hd, batch, fmt.Sprintf("a kill before operation %d", step))
			t.Logf("killed before operation %d: %v; stored: %v", step, killed, whole)
			if !killed {
				require.True(t, whole, "a batch that committed is stored")
				break
			}
		}
		require.Greater(t, step, 2, "the first batch made too few operations to crash between")
	})
}

// requireNothingOrWhole checks what a failed or killed first batch of hd
// left in storage: no trace of the session (the id is free again), or the
// header with every event of batch and nothing torn. It reports which.
func requireNothingOrWhole(t *testing.T, h *Harness, hd sessionlog.Header, batch []sessionlog.Event, what string) bool {
	t.Helper()
	st, err := h.Open(t)
	require.NoError(t, err)
	got, err := st.LoadStored(ctx, hd.ID, sessionlog.WithEvents)
	require.NoError(t, st.Close())
	if errors.Is(err, sessionlog.ErrNotFound) {
		c := open(t, h)
		has, err := c.Has(ctx, hd.ID)
		require.NoError(t, err, what)
		require.False(t, has, "%s: Has sees a log that Load does not", what)
		require.NoError(t, c.Create(ctx, hd), "%s: the id must be free again", what)
		require.NoError(t, c.Append(ctx, hd.ID, batch...), "%s: what it left must not block a new first batch", what)
		require.NoError(t, c.Close())
		return false
	}
	require.NoError(t, err, "%s: the log must be readable", what)
	require.Equal(t, hd, got.Header, what)
	require.Nil(t, got.TornMarker, "%s left part of the first batch (a torn fragment)", what)
	requireSameEvents(t, batch, got.Events, "%s left a header without its whole first batch", what)
	c := open(t, h)
	log, err := c.Load(ctx, hd.ID)
	require.NoError(t, err, what)
	requireSameEvents(t, batch, log.Events, "%s: a new process loads the batch as it was written", what)
	require.NoError(t, c.Close())
	return true
}

package contracttest

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
)

// interrupted is the committed part of a long turn that a crash cut short
// inside a step.
func interrupted() []sessionlog.Event {
	return numbered(
		sessionlog.TurnStart(),
		sessionlog.TurnEnd(sessionlog.ReasonCompleted, ""),
		sessionlog.TurnStart(),
		sessionlog.Message(sessionlog.RoleUser, "long task"),
		sessionlog.StepStart(),
		sessionlog.ToolCall("t1", "build", map[string]any{"target": "all"}),
		sessionlog.ToolResult("t1", "half the output", false),
	)
}

// A crash repair whose write fails at any of its storage operations makes
// the call that adopted the log fail with the fault itself, keeps every
// committed event in place, and lets a later call, the fault gone, repair
// the log exactly as if nothing had failed.
func testRepairFaults(t *testing.T, h *Harness) {
	load := func(c *sessionlog.Coordinator, id string) (*sessionlog.Log, error) { return c.Load(ctx, id) }
	create := func(c *sessionlog.Coordinator, id string) (*sessionlog.Log, error) {
		if err := c.Create(ctx, header(id, "/w")); err != nil {
			return nil, err
		}
		return c.Load(ctx, id)
	}
	for _, tc := range []struct {
		name  string
		torn  bool
		adopt func(*sessionlog.Coordinator, string) (*sessionlog.Log, error)
	}{
		{"LoadOpenTurn", false, load},
		{"LoadTornTail", true, load},
		{"CreateTornTail", true, create},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := interrupted()
			step := 1
			for ; ; step++ {
				id := fmt.Sprintf("%s-%d", tc.name, step)
				c := open(t, h)
				require.NoError(t, c.Create(ctx, header(id, "/w")))
				require.NoError(t, c.Append(ctx, id, prefix...))
				require.NoError(t, c.Close())
				if tc.torn {
					h.Tear(t, id, sessionlog.Event{Seq: int64(len(prefix) + 1), Kind: sessionlog.KindMessage, Role: sessionlog.RoleAssistant, Text: "never finished"})
				}

				st, err := h.Open(t)
				require.NoError(t, err)
				fired := failAt(h, st, step, syscall.EIO)
				c = sessionlog.NewCoordinator(st)
				log, err := tc.adopt(c, id)
				if fired() == "" {
					h.Intercept(st, nil)
					require.NoError(t, err)
					require.NoError(t, c.Close())
					requireRepaired(t, h, id, prefix, log)
					break
				}
				what := fmt.Sprintf("a repair failing at operation %d (%s)", step, fired())
				t.Log(what)
				require.Nil(t, log, "%s reported a log", what)
				requireFault(t, err, syscall.EIO, what)
				require.NotErrorIs(t, err, sessionlog.ErrCorrupt, what)

				// What the failed repair left: every committed event in
				// place and readable; closers written before the fault may
				// follow them.
				stored, err := st.LoadStored(ctx, id, sessionlog.WithEvents)
				require.NoError(t, err, "%s left the log unreadable", what)
				require.GreaterOrEqual(t, len(stored.Events), len(prefix), "%s truncated committed events", what)
				requireSameEvents(t, prefix, stored.Events[:len(prefix)], "%s changed committed events", what)
				_, err = sessionlog.ShapeOf(stored.Events)
				require.NoError(t, err, what)

				// The fault gone, the same Coordinator repairs on the next call.
				h.Intercept(st, nil)
				log, err = tc.adopt(c, id)
				require.NoError(t, err, "after %s", what)
				require.NoError(t, c.Close())
				requireRepaired(t, h, id, prefix, log)
			}
			require.Greater(t, step, 1, "the repair made no intercepted operation")
		})
	}
}

// requireRepaired checks that log, and the log a new process loads, is
// prefix closed by exactly one step end and one interrupted turn end.
func requireRepaired(t *testing.T, h *Harness, id string, prefix []sessionlog.Event, log *sessionlog.Log) {
	t.Helper()
	n := int64(len(prefix))
	want := append(append([]sessionlog.Event(nil), prefix...),
		sessionlog.Event{Seq: n + 1, Kind: sessionlog.KindStepEnd},
		sessionlog.TurnEnd(sessionlog.ReasonInterrupted, "closed by crash recovery"))
	want[n+1].Seq = n + 2
	require.NotNil(t, log)
	requireSameEvents(t, want, log.Events, "the repaired log")
	c := open(t, h)
	again, err := c.Load(ctx, id)
	require.NoError(t, err)
	requireSameEvents(t, want, again.Events, "the repair is durable")
	require.NoError(t, c.Close())
}

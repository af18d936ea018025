package contracttest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
)

// requireTailOf checks that tail is a LoadTail of full: the same header,
// events that are a suffix of full's beginning at a turn/start at or before
// full's last one (or at the first event), and so hold all of the last
// turn.
func requireTailOf(t *testing.T, full, tail *sessionlog.Log) {
	t.Helper()
	require.Equal(t, full.Header, tail.Header)
	require.NotEmpty(t, tail.Events)
	first := tail.Events[0].Seq
	require.True(t, first == 1 || tail.Events[0].Kind == sessionlog.KindTurnStart,
		"a tail begins at a turn/start or at the first event, not at seq %d (%s)", first, tail.Events[0].Kind)
	require.Equal(t, full.Events[first-1:], tail.Events, "a tail is the end of the log, event for event")
	last := 0
	for i, e := range full.Events {
		if e.Kind == sessionlog.KindTurnStart {
			last = i
		}
	}
	require.LessOrEqual(t, first, full.Events[last].Seq, "the tail holds the whole last turn")
}

func testTailIsTheLastTurn(t *testing.T, h *Harness) {
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("s", "/w")))
	tail, err := c.LoadTail(ctx, "s")
	require.NoError(t, err)
	assert.Empty(t, tail.Events, "a created session without events has an empty tail")

	require.NoError(t, c.Append(ctx, "s", sessionlog.Message(sessionlog.RoleSystem, "before any turn")))
	tail, err = c.LoadTail(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, []sessionlog.Kind{sessionlog.KindMessage}, kinds(tail.Events), "without a turn the tail is the whole log")

	for i := range 5 {
		require.NoError(t, c.Append(ctx, "s", sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, strings.Repeat("q", i)),
			sessionlog.StepStart(), sessionlog.StepEnd(), sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")))
	}
	require.NoError(t, c.Close())

	// In a new process, where the tail adopts the session, and again in
	// the process that holds it.
	c2 := open(t, h)
	tail, err = c2.LoadTail(ctx, "s")
	require.NoError(t, err)
	full, err := c2.Load(ctx, "s")
	require.NoError(t, err)
	requireTailOf(t, full, tail)
	tail, err = c2.LoadTail(ctx, "s")
	require.NoError(t, err)
	requireTailOf(t, full, tail)

	// A session adopted by its tail is appended to where it ends.
	c3 := open(t, h)
	_, err = c3.LoadTail(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, c3.Append(ctx, "s", sessionlog.TurnStart(), sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")))
	full, err = c3.Load(ctx, "s")
	require.NoError(t, err)
	requireContiguous(t, full.Events)
	require.Len(t, full.Events, 1+5*5+2)
	tail, err = c3.LoadTail(ctx, "s")
	require.NoError(t, err)
	requireTailOf(t, full, tail)
	assert.Equal(t, []sessionlog.Kind{sessionlog.KindTurnStart, sessionlog.KindTurnEnd}, kinds(tail.Events[len(tail.Events)-2:]))

	_, err = c3.LoadTail(ctx, "missing")
	require.ErrorIs(t, err, sessionlog.ErrNotFound)
}

func testTailRepairsACrash(t *testing.T, h *Harness) {
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("crash", "/w")))
	prefix := []sessionlog.Event{
		sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, "q1"), sessionlog.TurnEnd(sessionlog.ReasonCompleted, ""),
		sessionlog.TurnStart(), sessionlog.StepStart(), sessionlog.Message(sessionlog.RoleAssistant, "half"),
	}
	require.NoError(t, c.Append(ctx, "crash", prefix...))
	require.NoError(t, c.Close())
	torn := sessionlog.StepEnd()
	torn.Seq = int64(len(prefix) + 1)
	h.Tear(t, "crash", torn)

	c2 := open(t, h)
	tail, err := c2.LoadTail(ctx, "crash")
	require.NoError(t, err)
	end := tail.Events[len(tail.Events)-1]
	require.Equal(t, sessionlog.KindTurnEnd, end.Kind)
	assert.Equal(t, sessionlog.ReasonInterrupted, end.Reason.Kind, "the crashed turn is closed as interrupted")
	require.NoError(t, c2.Close())

	// The repair is durable and the whole log agrees with the tail.
	c3 := open(t, h)
	full, err := c3.Load(ctx, "crash")
	require.NoError(t, err)
	requireContiguous(t, full.Events)
	requireBalanced(t, full.Events)
	requireTailOf(t, full, tail)
	require.NoError(t, c3.Append(ctx, "crash", sessionlog.TurnStart()))
}

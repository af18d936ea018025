package contracttest

import (
	"context"
	"fmt"
	"math"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
)

// Run runs the whole suite; newHarness is called once per subtest and must
// return a harness over fresh, empty storage.
func Run(t *testing.T, newHarness func(t *testing.T) *Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, *Harness)
	}{
		{"AppendOnlyContiguousSeq", testAppendOnly},
		{"LazyMaterialization", testLazy},
		{"RefusesNonSerializable", testSerializability},
		{"RefusesMalformedEvents", testGrammar},
		{"CrashTornTailWithOpenStepAndTurn", testCrashOpenStep},
		{"CrashTornTailWithOpenTurn", testCrashOpenTurn},
		{"CrashTornTailOfBalancedLog", testCrashBalanced},
		{"CrashOpenTurnWithoutTornTail", testCrashNoTear},
		{"CorruptCommittedRecordFailsLoad", testCorrupt},
		{"CollisionAcrossCwd", testCollision},
		{"NoCwdIsItsOwnScope", testNoCwdScope},
		{"AdoptionAfterRestart", testAdoption},
		{"ConcurrentAppends", testConcurrent},
		{"CloseDrainsAppendsInFlight", testCloseDrains},
		{"FirstBatchAtomicWithHeader", testFirstBatchAtomic},
		{"RepairWriteFaults", testRepairFaults},
		{"OtherFormatVersionUntouched", testOtherVersion},
		{"Delete", testDelete},
		{"ListAndHas", testListHas},
		{"ForkLineageRoundTrips", testLineage},
		{"InjectedHookFaultIsNotAbsence", testInjectedFaults},
		{"RealNotDirIsNotAbsence", testRealNotDir},
		{"TailIsTheLastTurn", testTailIsTheLastTurn},
		{"TailRepairsACrash", testTailRepairsACrash},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newHarness(t)) })
	}
}

var ctx = context.Background()

// open starts a Coordinator over the harness's data and closes it at the
// end of the test (a second Close is harmless).
func open(t *testing.T, h *Harness) *sessionlog.Coordinator {
	t.Helper()
	st, err := h.Open(t)
	require.NoError(t, err)
	c := sessionlog.NewCoordinator(st)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func header(id, cwd string) sessionlog.Header {
	return sessionlog.Header{ID: id, Cwd: cwd, Backend: "test"}
}

func kinds(events []sessionlog.Event) []sessionlog.Kind {
	out := make([]sessionlog.Kind, len(events))
	for i, e := range events {
		out[i] = e.Kind
	}
	return out
}

func requireContiguous(t *testing.T, events []sessionlog.Event) {
	t.Helper()
	for i, e := range events {
		require.Equal(t, int64(i+1), e.Seq, "seq of event %d", i)
	}
}

func requireBalanced(t *testing.T, events []sessionlog.Event) {
	t.Helper()
	shape, err := sessionlog.ShapeOf(events)
	require.NoError(t, err)
	require.True(t, shape.Balanced(), "log left a turn or step open: %+v", shape)
}

func testAppendOnly(t *testing.T, h *Harness) {
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("s1", "/w")))
	require.NoError(t, c.Append(ctx, "s1", sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, "hi <there> & \"you\"")))
	require.NoError(t, c.Append(ctx, "s1",
		sessionlog.StepStart(),
		sessionlog.ToolCall("t1", "read", map[string]any{"path": "a.go", "n": 3, "deep": []any{true, nil, 1.5, "ü"}}),
		sessionlog.ToolResult("t1", "contents", false),
		sessionlog.StepEnd(),
		sessionlog.Message(sessionlog.RoleAssistant, "done"),
		sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")))
	first, err := c.Load(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, first.Events, 8)
	requireContiguous(t, first.Events)
	assert.Equal(t, "hi <there> & \"you\"", first.Events[1].Text)
	assert.Equal(t, map[string]any{"path": "a.go", "n": float64(3), "deep": []any{true, nil, 1.5, "ü"}}, first.Events[3].Input)

	// Appending never rewrites what is there: the earlier prefix is
	// unchanged, in this process and after a restart.
	require.NoError(t, c.Append(ctx, "s1", sessionlog.TurnStart(), sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")))
	require.NoError(t, c.Close())
	c2 := open(t, h)
	second, err := c2.Load(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, second.Events, 10)
	requireContiguous(t, second.Events)
	assert.Equal(t, first.Events, second.Events[:8])
	assert.Equal(t, header("s1", "/w").ID, second.Header.ID)
	assert.Equal(t, sessionlog.FormatVersion, second.Header.FormatVersion)

	// A caller may state the next seq, never another one.
	require.NoError(t, c2.Append(ctx, "s1", sessionlog.Event{Seq: 11, Kind: sessionlog.KindMessage, Role: sessionlog.RoleSystem, Text: "x"}))
	err = c2.Append(ctx, "s1", sessionlog.Event{Seq: 5, Kind: sessionlog.KindMessage, Role: sessionlog.RoleSystem, Text: "x"})
	require.ErrorIs(t, err, sessionlog.ErrInvalid)
}

func testLazy(t *testing.T, h *Harness) {
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("lazy", "/w")))
	has, err := c.Has(ctx, "lazy")
	require.NoError(t, err)
	assert.False(t, has, "nothing is stored before the first append")
	list, err := c.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, list)
	log, err := c.Load(ctx, "lazy")
	require.NoError(t, err, "a created session loads in its own process, empty")
	assert.Empty(t, log.Events)
	require.NoError(t, c.Append(ctx, "lazy")) // no events: still nothing
	require.NoError(t, c.Close())

	c2 := open(t, h)
	_, err = c2.Load(ctx, "lazy")
	require.ErrorIs(t, err, sessionlog.ErrNotFound, "a never-appended session left nothing behind")
	require.NoError(t, c2.Create(ctx, header("lazy", "/w")))
	require.NoError(t, c2.Append(ctx, "lazy", sessionlog.Message(sessionlog.RoleUser, "x")))
	has, err = c2.Has(ctx, "lazy")
	require.NoError(t, err)
	assert.True(t, has)
	list, err = c2.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "lazy", list[0].ID)
}

type cyclic struct {
	Next *cyclic
}

type withFunc struct {
	F func()
}

func testSerializability(t *testing.T, h *Harness) {
	selfMap := map[string]any{}
	selfMap["me"] = selfMap
	selfSlice := []any{nil}
	selfSlice[0] = selfSlice
	loop := &cyclic{}
	loop.Next = loop
	var x int
	bad := map[string]any{
		"NaN":                 math.NaN(),
		"+Inf":                math.Inf(1),
		"-Inf":                math.Inf(-1),
		"float32 NaN":         float32(math.NaN()),
		"invalid UTF-8":       "a\xffb",
		"invalid UTF-8 key":   map[string]any{"\xfe": 1},
		"func":                func() {},
		"chan":                make(chan int),
		"complex":             complex(1, 2),
		"unsafe.Pointer":      unsafe.Pointer(&x),
		"map with int keys":   map[int]string{1: "a"},
		"map with bool keys":  map[bool]any{true: 1},
		"cyclic map":          selfMap,
		"cyclic slice":        selfSlice,
		"cyclic pointer":      loop,
		"struct with func":    withFunc{F: func() {}},
		"integer beyond 2^53": int64(1)<<53 + 1,
		"uint64 max":          uint64(math.MaxUint64),
		"[]byte":              []byte("raw"),
		"nested NaN":          []any{map[string]any{"a": []float64{1, math.NaN()}}},
	}
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("ser", "")))
	for name, v := range bad {
		for _, ev := range []sessionlog.Event{
			sessionlog.ToolCall("t", "tool", v),
			sessionlog.ToolResult("t", v, false),
			{Kind: sessionlog.KindMessage, Role: sessionlog.RoleUser, Meta: map[string]any{"v": v}},
		} {
			err := c.Append(ctx, "ser", ev)
			require.ErrorIs(t, err, sessionlog.ErrNotSerializable, "%s in %s", name, ev.Kind)
		}
	}
	err := c.Append(ctx, "ser", sessionlog.Message(sessionlog.RoleUser, "bad \xc3\x28 text"))
	require.ErrorIs(t, err, sessionlog.ErrNotSerializable, "invalid UTF-8 in message text")
	// A refused batch writes nothing, not even the events before the bad one.
	err = c.Append(ctx, "ser", sessionlog.Message(sessionlog.RoleUser, "ok"), sessionlog.ToolCall("t", "x", math.NaN()))
	require.ErrorIs(t, err, sessionlog.ErrNotSerializable)
	has, err := c.Has(ctx, "ser")
	require.NoError(t, err)
	assert.False(t, has, "refused values never materialize the log")

	// A value reachable twice is not a cycle; edge values that do survive
	// are accepted.
	shared := map[string]any{"k": "v"}
	good := []any{shared, shared, int64(1) << 53, -(int64(1) << 53), math.MaxFloat64, "", []any{}, map[string]any{}}
	require.NoError(t, c.Append(ctx, "ser", sessionlog.ToolCall("t", "ok", good)))
	log, err := c.Load(ctx, "ser")
	require.NoError(t, err)
	require.Len(t, log.Events, 1)
}

func testGrammar(t *testing.T, h *Harness) {
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("g", "/w")))
	bad := [][]sessionlog.Event{
		{sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")},
		{sessionlog.StepStart()},
		{sessionlog.StepEnd()},
		{sessionlog.TurnStart(), sessionlog.TurnStart()},
		{sessionlog.TurnStart(), sessionlog.StepStart(), sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")},
		{sessionlog.TurnStart(), {Kind: sessionlog.KindTurnEnd}},
		{{Kind: "mystery"}},
		{{Kind: sessionlog.KindMessage}},
		{{Kind: sessionlog.KindToolCall, Tool: "x"}},
	}
	for i, evs := range bad {
		require.ErrorIs(t, c.Append(ctx, "g", evs...), sessionlog.ErrInvalid, "case %d", i)
	}
	// Refused batches leave no trace and do not disturb the projected state.
	require.NoError(t, c.Append(ctx, "g", sessionlog.TurnStart()))
	require.ErrorIs(t, c.Append(ctx, "g", sessionlog.TurnStart()), sessionlog.ErrInvalid)
	require.NoError(t, c.Append(ctx, "g", sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")))
	log, err := c.Load(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, []sessionlog.Kind{sessionlog.KindTurnStart, sessionlog.KindTurnEnd}, kinds(log.Events))
	requireContiguous(t, log.Events)
}

// crash builds a log with prefix, closes the process, tears a write of
// torn, and returns the log a new process loads.
func crash(t *testing.T, h *Harness, prefix []sessionlog.Event, torn sessionlog.Event) *sessionlog.Log {
	t.Helper()
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("crash", "/w")))
	require.NoError(t, c.Append(ctx, "crash", prefix...))
	require.NoError(t, c.Close())
	torn.Seq = int64(len(prefix) + 1)
	h.Tear(t, "crash", torn)

	c2 := open(t, h)
	log, err := c2.Load(ctx, "crash")
	require.NoError(t, err)
	requireContiguous(t, log.Events)
	requireBalanced(t, log.Events)
	// The repair is durable: a third process sees the same log, unchanged.
	require.NoError(t, c2.Close())
	c3 := open(t, h)
	again, err := c3.Load(ctx, "crash")
	require.NoError(t, err)
	require.Equal(t, log.Events, again.Events)
	// And the session goes on.
	require.NoError(t, c3.Append(ctx, "crash", sessionlog.TurnStart()))
	return log
}

func testCrashOpenStep(t *testing.T, h *Harness) {
	prefix := []sessionlog.Event{
		sessionlog.TurnStart(), sessionlog.TurnEnd(sessionlog.ReasonCompleted, ""),
		sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, "long task"),
		sessionlog.StepStart(), sessionlog.ToolCall("t1", "build", map[string]any{"target": "all"}),
	}
	log := crash(t, h, prefix, sessionlog.ToolResult("t1", "half-written output", false))
	require.Len(t, log.Events, len(prefix)+2, "the interrupted turn is preserved, the torn event dropped, two closers added")
	for i, e := range prefix {
		assert.Equal(t, e.Kind, log.Events[i].Kind)
	}
	assert.Equal(t, sessionlog.KindStepEnd, log.Events[6].Kind)
	require.Equal(t, sessionlog.KindTurnEnd, log.Events[7].Kind)
	assert.Equal(t, sessionlog.ReasonInterrupted, log.Events[7].Reason.Kind)
	assert.Equal(t, "long task", log.Events[3].Text)
}

func testCrashOpenTurn(t *testing.T, h *Harness) {
	prefix := []sessionlog.Event{sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, "q")}
	log := crash(t, h, prefix, sessionlog.Message(sessionlog.RoleAssistant, "a partial answer"))
	assert.Equal(t, []sessionlog.Kind{sessionlog.KindTurnStart, sessionlog.KindMessage, sessionlog.KindTurnEnd}, kinds(log.Events))
	assert.Equal(t, sessionlog.ReasonInterrupted, log.Events[2].Reason.Kind)
}

func testCrashBalanced(t *testing.T, h *Harness) {
	prefix := []sessionlog.Event{sessionlog.TurnStart(), sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")}
	log := crash(t, h, prefix, sessionlog.TurnStart())
	assert.Equal(t, []sessionlog.Kind{sessionlog.KindTurnStart, sessionlog.KindTurnEnd}, kinds(log.Events),
		"only the torn fragment goes; a balanced log needs no closers")
}

func testCrashNoTear(t *testing.T, h *Harness) {
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("open", "")))
	require.NoError(t, c.Append(ctx, "open", sessionlog.TurnStart(), sessionlog.StepStart()))
	// In its own process the open turn is in progress, not crashed.
	log, err := c.Load(ctx, "open")
	require.NoError(t, err)
	assert.Len(t, log.Events, 2)
	require.NoError(t, c.Close())

	c2 := open(t, h)
	// Appending to a crashed session adopts and repairs it first.
	require.NoError(t, c2.Append(ctx, "open", sessionlog.TurnStart()))
	log, err = c2.Load(ctx, "open")
	require.NoError(t, err)
	assert.Equal(t, []sessionlog.Kind{sessionlog.KindTurnStart, sessionlog.KindStepStart, sessionlog.KindStepEnd, sessionlog.KindTurnEnd, sessionlog.KindTurnStart}, kinds(log.Events))
	requireContiguous(t, log.Events)
}

func testCorrupt(t *testing.T, h *Harness) {
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("bad", "/w")))
	require.NoError(t, c.Append(ctx, "bad", sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, "a"),
		sessionlog.Message(sessionlog.RoleAssistant, "b"), sessionlog.TurnEnd(sessionlog.ReasonCompleted, ""), sessionlog.TurnStart()))
	require.NoError(t, c.Close())
	h.Corrupt(t, "bad", 3)

	for range 2 { // failing twice proves the first failure truncated nothing
		c2 := open(t, h)
		_, err := c2.Load(ctx, "bad")
		require.ErrorIs(t, err, sessionlog.ErrCorrupt)
		require.NotErrorIs(t, err, sessionlog.ErrNotFound)
		require.ErrorIs(t, c2.Append(ctx, "bad", sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")), sessionlog.ErrCorrupt)
		require.NoError(t, c2.Close())
	}
}

func testCollision(t *testing.T, h *Harness) {
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("dup", "/a")))
	require.NoError(t, c.Append(ctx, "dup", sessionlog.Message(sessionlog.RoleUser, "original")))
	// In the same process, another header for a live id is refused.
	require.ErrorIs(t, c.Create(ctx, header("dup", "/b")), sessionlog.ErrCollision)
	require.NoError(t, c.Close())

	c2 := open(t, h)
	require.ErrorIs(t, c2.Create(ctx, header("dup", "/b")), sessionlog.ErrCollision, "same id in another cwd is not a resume")
	other := header("dup", "/a")
	other.Backend = "other"
	require.ErrorIs(t, c2.Create(ctx, other), sessionlog.ErrCollision, "same id and cwd with another header")
	log, err := c2.Load(ctx, "dup")
	require.NoError(t, err)
	assert.Equal(t, "/a", log.Header.Cwd, "the original is untouched")
	require.Len(t, log.Events, 1)
	assert.Equal(t, "original", log.Events[0].Text)
}

// A live no-cwd session must not adopt a same-id log from a real cwd: the
// empty cwd is the definite no-cwd scope.
func testNoCwdScope(t *testing.T, h *Harness) {
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("scoped", "/w")))
	require.NoError(t, c.Append(ctx, "scoped", sessionlog.Message(sessionlog.RoleUser, "in /w")))
	require.NoError(t, c.Close())

	c2 := open(t, h)
	require.ErrorIs(t, c2.Create(ctx, header("scoped", "")), sessionlog.ErrCollision)
	log, err := c2.Load(ctx, "scoped")
	require.NoError(t, err)
	assert.Equal(t, "/w", log.Header.Cwd)
	require.Len(t, log.Events, 1)

	// And the other way round: a no-cwd log is not adopted by a cwd session.
	require.NoError(t, c2.Create(ctx, header("nocwd", "")))
	require.NoError(t, c2.Append(ctx, "nocwd", sessionlog.Message(sessionlog.RoleUser, "no cwd")))
	require.NoError(t, c2.Close())
	c3 := open(t, h)
	require.ErrorIs(t, c3.Create(ctx, header("nocwd", "/w")), sessionlog.ErrCollision)
	require.NoError(t, c3.Create(ctx, header("nocwd", "")), "same scope and header: adopted")
}

func testAdoption(t *testing.T, h *Harness) {
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("adopt", "/w")))
	require.NoError(t, c.Create(ctx, header("adopt", "/w")), "Create is idempotent")
	require.NoError(t, c.Append(ctx, "adopt", sessionlog.TurnStart(), sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")))
	require.NoError(t, c.Close())

	c2 := open(t, h)
	require.NoError(t, c2.Create(ctx, header("adopt", "/w")), "same header in the same cwd is adopted")
	require.NoError(t, c2.Append(ctx, "adopt", sessionlog.TurnStart()))
	log, err := c2.Load(ctx, "adopt")
	require.NoError(t, err)
	require.Len(t, log.Events, 3)
	requireContiguous(t, log.Events)

	// Appending without Create adopts from any scope, too.
	require.NoError(t, c2.Close())
	c3 := open(t, h)
	require.NoError(t, c3.Append(ctx, "adopt", sessionlog.Message(sessionlog.RoleUser, "later")))
	log, err = c3.Load(ctx, "adopt")
	require.NoError(t, err)
	// The crash left turn 2 open; it was closed before the new event.
	assert.Equal(t, []sessionlog.Kind{sessionlog.KindTurnStart, sessionlog.KindTurnEnd, sessionlog.KindTurnStart, sessionlog.KindTurnEnd, sessionlog.KindMessage}, kinds(log.Events))
	require.ErrorIs(t, c3.Append(ctx, "never-created", sessionlog.TurnStart()), sessionlog.ErrNotFound)
}

func testConcurrent(t *testing.T, h *Harness) {
	c := open(t, h)
	const sessions, writers, each = 3, 6, 15
	for s := range sessions {
		require.NoError(t, c.Create(ctx, header(fmt.Sprintf("c%d", s), "/w")))
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions*writers*each)
	for s := range sessions {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					errs <- c.Append(ctx, fmt.Sprintf("c%d", s), sessionlog.Message(sessionlog.RoleUser, fmt.Sprintf("%d/%d", w, i)))
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, c.Close())
	c2 := open(t, h)
	for s := range sessions {
		log, err := c2.Load(ctx, fmt.Sprintf("c%d", s))
		require.NoError(t, err)
		require.Len(t, log.Events, writers*each)
		requireContiguous(t, log.Events)
		seen := map[string]bool{}
		last := map[int]int{}
		for _, e := range log.Events {
			require.False(t, seen[e.Text], "duplicate %s", e.Text)
			seen[e.Text] = true
			var w, i int
			_, err := fmt.Sscanf(e.Text, "%d/%d", &w, &i)
			require.NoError(t, err)
			if prev, ok := last[w]; ok {
				require.Greater(t, i, prev, "one writer's appends stay in order")
			}
			last[w] = i
		}
	}
}

func testDelete(t *testing.T, h *Harness) {
	c := open(t, h)
	require.ErrorIs(t, c.Delete(ctx, "nope"), sessionlog.ErrNotFound)
	require.NoError(t, c.Create(ctx, header("del", "/w")))
	require.NoError(t, c.Delete(ctx, "del"), "deleting a never-materialized session")
	require.NoError(t, c.Create(ctx, header("del", "/w")))
	require.NoError(t, c.Append(ctx, "del", sessionlog.TurnStart()))
	require.NoError(t, c.Delete(ctx, "del"))
	has, err := c.Has(ctx, "del")
	require.NoError(t, err)
	assert.False(t, has)
	_, err = c.Load(ctx, "del")
	require.ErrorIs(t, err, sessionlog.ErrNotFound)
	require.ErrorIs(t, c.Delete(ctx, "del"), sessionlog.ErrNotFound)
	// The id is free again, in any cwd.
	require.NoError(t, c.Create(ctx, header("del", "/other")))
	require.NoError(t, c.Append(ctx, "del", sessionlog.TurnStart()))
	require.NoError(t, c.Close())
	// A stored session of another process is found in any scope.
	c2 := open(t, h)
	require.NoError(t, c2.Delete(ctx, "del"))
	list, err := c2.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, list)
}

func testListHas(t *testing.T, h *Harness) {
	c := open(t, h)
	list, err := c.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, list, "an empty store lists nothing")
	for _, hd := range []sessionlog.Header{header("b", "/x"), header("a", ""), header("c", "/y")} {
		require.NoError(t, c.Create(ctx, hd))
		require.NoError(t, c.Append(ctx, hd.ID, sessionlog.Message(sessionlog.RoleUser, hd.ID)))
	}
	list, err = c.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 3)
	assert.Equal(t, []string{"a", "b", "c"}, []string{list[0].ID, list[1].ID, list[2].ID})
	assert.Equal(t, "/x", list[1].Cwd)
	require.NoError(t, c.Close())
	c2 := open(t, h)
	for _, id := range []string{"a", "b", "c"} {
		has, err := c2.Has(ctx, id)
		require.NoError(t, err)
		assert.True(t, has, id)
	}
	has, err := c2.Has(ctx, "z")
	require.NoError(t, err)
	assert.False(t, has)
	_, err = c2.Has(ctx, "../etc")
	require.ErrorIs(t, err, sessionlog.ErrInvalid)
}

func testLineage(t *testing.T, h *Harness) {
	c := open(t, h)
	hd := header("child", "/w")
	hd.ForkedFrom = &sessionlog.Lineage{SessionID: "parent", Seq: 7}
	require.NoError(t, c.Create(ctx, hd))
	require.NoError(t, c.Append(ctx, "child", sessionlog.TurnStart()))
	require.NoError(t, c.Close())
	c2 := open(t, h)
	log, err := c2.Load(ctx, "child")
	require.NoError(t, err)
	require.NotNil(t, log.Header.ForkedFrom)
	assert.Equal(t, sessionlog.Lineage{SessionID: "parent", Seq: 7}, *log.Header.ForkedFrom)
	require.NoError(t, c2.Create(ctx, hd), "an identical header with lineage adopts")
	hd.ForkedFrom = nil
	require.ErrorIs(t, c2.Create(ctx, hd), sessionlog.ErrCollision, "lineage is part of the header")
}

// faulty fails the lookup hooks with err while armed. It stands in for
// faults that cannot be produced for real here (the tests run as root,
// for whom permission bits do not apply).
type faulty struct {
	inner sessionlog.Storage
	mu    sync.Mutex
	err   syscall.Errno
}

func (f *faulty) fault(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == 0 {
		return nil
	}
	return injected(op, f.err)
}

func (f *faulty) LoadStored(ctx context.Context, id string, d sessionlog.Depth) (*sessionlog.Stored, error) {
	if err := f.fault("lstat"); err != nil {
		return nil, err
	}
	return f.inner.LoadStored(ctx, id, d)
}

func (f *faulty) LoadLive(ctx context.Context, id, cwd string, d sessionlog.Depth) (*sessionlog.Stored, error) {
	if err := f.fault("open"); err != nil {
		return nil, err
	}
	return f.inner.LoadLive(ctx, id, cwd, d)
}

func (f *faulty) AppendBatch(ctx context.Context, b sessionlog.Batch) error {
	if err := f.fault("write"); err != nil {
		return err
	}
	return f.inner.AppendBatch(ctx, b)
}

func (f *faulty) CommitRepair(ctx context.Context, r sessionlog.Repair) error {
	if err := f.fault("write"); err != nil {
		return err
	}
	return f.inner.CommitRepair(ctx, r)
}

func (f *faulty) DeleteStored(ctx context.Context, id string) error {
	if err := f.fault("unlink"); err != nil {
		return err
	}
	return f.inner.DeleteStored(ctx, id)
}

func (f *faulty) List(ctx context.Context) ([]sessionlog.Header, error) {
	if err := f.fault("readdir"); err != nil {
		return nil, err
	}
	return f.inner.List(ctx)
}

func (f *faulty) Close() error { return f.inner.Close() }

func requireFault(t *testing.T, err, want error, what string) {
	t.Helper()
	require.Error(t, err, what)
	require.ErrorIs(t, err, want, what)
	require.NotErrorIs(t, err, sessionlog.ErrNotFound, "%s: a fault reported as absence", what)
}

func testInjectedFaults(t *testing.T, h *Harness) {
	for _, errno := range []syscall.Errno{syscall.EACCES, syscall.ENOTDIR, syscall.EIO} {
		t.Run(errno.Error(), func(t *testing.T) {
			st, err := h.Open(t)
			require.NoError(t, err)
			f := &faulty{inner: st}
			c := sessionlog.NewCoordinator(f)
			require.NoError(t, c.Create(ctx, header("f1", "/w")))
			require.NoError(t, c.Append(ctx, "f1", sessionlog.TurnStart()))
			require.NoError(t, c.Close())

			st, err = h.Open(t)
			require.NoError(t, err)
			f = &faulty{inner: st, err: errno}
			c = sessionlog.NewCoordinator(f)
			defer c.Close()
			for _, id := range []string{"f1", "unknown"} {
				_, err := c.Has(ctx, id)
				requireFault(t, err, errno, "Has "+id)
				_, err = c.Load(ctx, id)
				requireFault(t, err, errno, "Load "+id)
				requireFault(t, c.Delete(ctx, id), errno, "Delete "+id)
				requireFault(t, c.Append(ctx, id, sessionlog.TurnStart()), errno, "Append "+id)
			}
			_, err = c.List(ctx)
			requireFault(t, err, errno, "List")
			requireFault(t, c.Create(ctx, header("fresh", "/w")), errno, "Create must not proceed on a false absence")
			requireFault(t, c.Create(ctx, header("f1", "/other")), errno, "Create must not skip the collision check")

			f.mu.Lock()
			f.err = 0
			f.mu.Unlock()
			log, err := c.Load(ctx, "f1")
			require.NoError(t, err, "the faults changed nothing")
			assert.Equal(t, "/w", log.Header.Cwd)
			has, err := c.Has(ctx, "fresh")
			require.NoError(t, err)
			assert.False(t, has)
		})
	}
}

func testRealNotDir(t *testing.T, h *Harness) {
	if h.NotDir == nil {
		t.Skip("this backend keeps nothing in directories")
	}
	c := open(t, h)
	require.NoError(t, c.Create(ctx, header("nd", "/w")))
	require.NoError(t, c.Append(ctx, "nd", sessionlog.TurnStart()))
	require.NoError(t, c.Close())
	h.NotDir(t)

	st, err := h.Open(t)
	if err != nil {
		requireFault(t, err, syscall.ENOTDIR, "Open")
		return
	}
	c2 := sessionlog.NewCoordinator(st)
	defer c2.Close()
	for _, id := range []string{"nd", "unknown"} {
		_, err := c2.Has(ctx, id)
		requireFault(t, err, syscall.ENOTDIR, "Has "+id)
		_, err = c2.Load(ctx, id)
		requireFault(t, err, syscall.ENOTDIR, "Load "+id)
		requireFault(t, c2.Delete(ctx, id), syscall.ENOTDIR, "Delete "+id)
	}
	_, err = c2.List(ctx)
	requireFault(t, err, syscall.ENOTDIR, "List")
	requireFault(t, c2.Create(ctx, header("fresh", "/w")), syscall.ENOTDIR, "Create")
}

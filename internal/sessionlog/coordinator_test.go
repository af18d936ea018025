package sessionlog

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ctx = context.Background()

// fake is a minimal Storage for what the contract suite cannot reach
// through a real backend: a zero torn marker, a blocked or failing write.
type fake struct {
	mu      sync.Mutex
	stored  *Stored
	batches []Batch
	repairs []Repair
	block   chan struct{} // when set, AppendBatch waits for it
	entered chan struct{} // signalled when AppendBatch starts
	fail    error
}

func (f *fake) LoadStored(context.Context, string, Depth) (*Stored, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stored == nil {
		return nil, ErrNotFound
	}
	cp := *f.stored
	cp.Events = append([]Event(nil), f.stored.Events...)
	return &cp, nil
}

func (f *fake) LoadLive(c context.Context, id, _ string, d Depth) (*Stored, error) {
	return f.LoadStored(c, id, d)
}

func (f *fake) AppendBatch(_ context.Context, b Batch) error {
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.batches = append(f.batches, b)
	if b.Materialize {
		f.stored = &Stored{Header: b.Header}
	}
	f.stored.Events = append(f.stored.Events, b.Events...)
	return nil
}

func (f *fake) CommitRepair(_ context.Context, r Repair) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.repairs = append(f.repairs, r)
	f.stored.TornMarker = nil
	f.stored.Events = append(f.stored.Events, r.Closers...)
	return nil
}

func (f *fake) DeleteStored(context.Context, string) error { return nil }
func (f *fake) List(context.Context) ([]Header, error)     { return nil, nil }
func (f *fake) Close() error                               { return nil }

func hdr(id string) Header {
	return Header{ID: id, Backend: "test", FormatVersion: FormatVersion}
}

func TestZeroTornMarkerIsStillAMarker(t *testing.T) {
	f := &fake{stored: &Stored{
		Header:     hdr("s"),
		Events:     []Event{{Seq: 1, Kind: KindTurnStart}, {Seq: 2, Kind: KindTurnEnd, Reason: &Reason{Kind: ReasonCompleted}}},
		TornMarker: 0,
	}}
	c := NewCoordinator(f)
	defer c.Close()
	log, err := c.Load(ctx, "s")
	require.NoError(t, err)
	assert.Len(t, log.Events, 2)
	require.Len(t, f.repairs, 1, "a zero marker is a marker: the torn fragment must be discarded")
	assert.Equal(t, 0, f.repairs[0].TornMarker)
	assert.Empty(t, f.repairs[0].Closers)
}

func TestConcurrentAppendsShareOneWrite(t *testing.T) {
	f := &fake{block: make(chan struct{}), entered: make(chan struct{}, 100)}
	c := NewCoordinator(f)
	defer c.Close()
	require.NoError(t, c.Create(ctx, hdr("s")))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); assert.NoError(t, c.Append(ctx, "s", Message(RoleUser, "first"))) }()
	<-f.entered // the first write is in progress and blocked
	for range 5 {
		wg.Add(1)
		go func() { defer wg.Done(); assert.NoError(t, c.Append(ctx, "s", Message(RoleUser, "queued"))) }()
	}
	require.Eventually(t, func() bool {
		c.mu.Lock()
		s := c.sessions["s"]
		c.mu.Unlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.queue) == 5
	}, 5*time.Second, time.Millisecond)
	close(f.block)
	wg.Wait()
	require.Len(t, f.batches, 2, "the five queued appends went out as one group commit")
	assert.True(t, f.batches[0].Materialize)
	assert.False(t, f.batches[1].Materialize)
	assert.Len(t, f.batches[1].Events, 5)
	assert.Equal(t, int64(6), f.batches[1].Events[4].Seq)
}

// Close waits for every append that began before it, the one being
// written and those queued behind it, and they are all written. The bubble
// makes it deterministic: synctest.Wait returns only once every goroutine
// is blocked for good, so Close has either returned or is waiting.
func TestCloseDrainsQueuedAppends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{block: make(chan struct{}), entered: make(chan struct{}, 10)}
		c := NewCoordinator(f)
		require.NoError(t, c.Create(ctx, hdr("s")))
		errs := make(chan error, 6)
		go func() { errs <- c.Append(ctx, "s", Message(RoleUser, "writing")) }()
		<-f.entered // held inside the write
		for range 5 {
			go func() { errs <- c.Append(ctx, "s", Message(RoleUser, "queued")) }()
		}
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		synctest.Wait()
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) with six appends in flight", err)
		default:
		}
		require.ErrorIs(t, c.Append(ctx, "s", Message(RoleUser, "late")), ErrClosed)
		close(f.block)
		require.NoError(t, <-closed)
		for range 6 {
			require.NoError(t, <-errs)
		}
		require.Len(t, f.batches, 2, "the held write, then the five queued behind it as one")
		assert.Len(t, f.batches[1].Events, 5)
		assert.Equal(t, int64(6), f.stored.Events[5].Seq)
	})
}

func TestFailedWriteForgetsStateAndReadsStorageAgain(t *testing.T) {
	f := &fake{}
	c := NewCoordinator(f)
	defer c.Close()
	require.NoError(t, c.Create(ctx, hdr("s")))
	require.NoError(t, c.Append(ctx, "s", TurnStart()))
	f.fail = syscall.EIO
	err := c.Append(ctx, "s", Message(RoleUser, "lost"))
	require.ErrorIs(t, err, syscall.EIO)
	f.fail = nil
	// The next call re-adopts from storage, which treats the open turn as
	// crashed: the session state is unknown after a failed write.
	require.NoError(t, c.Append(ctx, "s", TurnStart()))
	log, err := c.Load(ctx, "s")
	require.NoError(t, err)
	var kinds []Kind
	for _, e := range log.Events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []Kind{KindTurnStart, KindTurnEnd, KindTurnStart}, kinds)
}

func TestCancelledLeaderStillWritesTheGroup(t *testing.T) {
	f := &fake{}
	c := NewCoordinator(f)
	defer c.Close()
	require.NoError(t, c.Create(ctx, hdr("s")))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.NoError(t, c.Append(cctx, "s", TurnStart()), "a write in progress is not abandoned half way")
}

func TestCreateValidatesHeader(t *testing.T) {
	c := NewCoordinator(&fake{})
	defer c.Close()
	require.ErrorIs(t, c.Create(ctx, Header{ID: "../x", Backend: "b"}), ErrInvalid)
	require.ErrorIs(t, c.Create(ctx, Header{ID: "x"}), ErrInvalid)
	require.ErrorIs(t, c.Create(ctx, Header{ID: "x", Backend: "b", FormatVersion: 2}), ErrVersion)
	require.ErrorIs(t, c.Create(ctx, Header{ID: "x", Backend: "b", Cwd: "\xff"}), ErrNotSerializable)
	require.ErrorIs(t, c.Create(ctx, Header{ID: "x", Backend: "b", ForkedFrom: &Lineage{SessionID: "a/b"}}), ErrInvalid)
}

func TestValidateID(t *testing.T) {
	for _, ok := range []string{"a", "sc-01J0000000000000000000000", "A.b_c-1"} {
		assert.NoError(t, ValidateID(ok), ok)
	}
	for _, bad := range []string{"", ".hidden", "..", "a/b", "a\\b", "a b", "ü", string(make([]byte, 129))} {
		assert.ErrorIs(t, ValidateID(bad), ErrInvalid, bad)
	}
}

func TestIsAbsentOnlyForENOENT(t *testing.T) {
	assert.True(t, IsAbsent(syscall.ENOENT))
	for _, e := range []error{syscall.EACCES, syscall.ENOTDIR, syscall.EIO, syscall.ELOOP, errors.New("x")} {
		assert.False(t, IsAbsent(e), e.Error())
	}
}

package sessionlog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Coordinator owns the orchestration every backend shares: adoption of
// stored logs, per-session serialized and group-committed appends, drain on
// Close, crash repair and collision checks. A backend supplies only Storage;
// it cannot reach the Coordinator's state.
type Coordinator struct {
	store Storage

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session
	ops      sync.WaitGroup
}

var _ Service = (*Coordinator)(nil)

// NewCoordinator returns a Service over store. The Coordinator must be the
// only writer of the store. It remembers every session it has touched until
// Delete or Close (a few hundred bytes each), so long-lived processes should
// open one per unit of work, as the scripted backend does per visit.
func NewCoordinator(store Storage) *Coordinator {
	return &Coordinator{store: store, sessions: map[string]*session{}}
}

// session is the live state of one id. Lock order: io before mu.
type session struct {
	id string

	// io serializes storage calls for this id. Appenders do not need it
	// to queue, so they can join a group while a write is in progress.
	io sync.Mutex

	mu           sync.Mutex
	gone         bool // removed from Coordinator.sessions; callers start over
	inited       bool // header, materialized and shape are known; set under io
	header       Header
	materialized bool
	shape        Shape // includes queued, not yet written events
	queue        []*pending
	flushing     bool
}

type pending struct {
	events []Event
	done   chan error
}

func (c *Coordinator) begin() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.ops.Add(1)
	return nil
}

func (c *Coordinator) end() { c.ops.Done() }

func (c *Coordinator) entry(id string) *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	if s == nil {
		s = &session{id: id}
		c.sessions[id] = s
	}
	return s
}

// drop forgets s, so the next call re-reads the id from storage. The caller
// holds s.mu.
func (c *Coordinator) drop(s *session) {
	s.gone = true
	c.mu.Lock()
	if c.sessions[s.id] == s {
		delete(c.sessions, s.id)
	}
	c.mu.Unlock()
}

func (s *session) isGone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone
}

func (s *session) status() (gone, inited bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone, s.inited
}

func (c *Coordinator) dropLocked(s *session) {
	s.mu.Lock()
	c.drop(s)
	s.mu.Unlock()
}

// Create implements Service.
func (c *Coordinator) Create(ctx context.Context, h Header) error {
	if err := c.begin(); err != nil {
		return err
	}
	defer c.end()
	if h.FormatVersion == 0 {
		h.FormatVersion = FormatVersion
	}
	if err := ValidateHeader(h); err != nil {
		return err
	}
	for {
		if retry, err := c.create(ctx, c.entry(h.ID), h); !retry {
			return err
		}
	}
}

func (c *Coordinator) create(ctx context.Context, s *session, h Header) (retry bool, err error) {
	s.io.Lock()
	defer s.io.Unlock()
	gone, inited := s.status()
	if gone {
		return true, nil
	}
	if inited {
		s.mu.Lock()
		cur := s.header
		s.mu.Unlock()
		if cur.equal(h) {
			return false, nil
		}
		return false, fmt.Errorf("%w: session %s is already open with another header (cwd %q, backend %q)", ErrCollision, h.ID, cur.Cwd, cur.Backend)
	}
	st, err := c.store.LoadLive(ctx, h.ID, h.Cwd, WithEvents)
	switch {
	case err == nil:
		if !st.Header.equal(h) {
			c.dropLocked(s)
			return false, fmt.Errorf("%w: session %s already exists in cwd %q with another header (backend %q); choose another id", ErrCollision, h.ID, h.Cwd, st.Header.Backend)
		}
		if _, err := c.adopt(ctx, s, st, WithEvents); err != nil {
			c.dropLocked(s)
			return false, err
		}
		return false, nil
	case !errors.Is(err, ErrNotFound):
		c.dropLocked(s)
		return false, fmt.Errorf("create session %s: %w", h.ID, err)
	}
	// Absent from this cwd's scope: the same id in any other scope is a
	// collision, never a resume, and the other log is left untouched.
	other, err := c.store.LoadStored(ctx, h.ID, HeaderOnly)
	switch {
	case err == nil:
		c.dropLocked(s)
		return false, fmt.Errorf("%w: session %s already exists under cwd %q, not %q; choose another id", ErrCollision, h.ID, other.Header.Cwd, h.Cwd)
	case !errors.Is(err, ErrNotFound):
		c.dropLocked(s)
		return false, fmt.Errorf("create session %s: %w", h.ID, err)
	}
	s.mu.Lock()
	s.header, s.materialized, s.shape, s.inited = h, false, Shape{}, true
	s.mu.Unlock()
	return false, nil
}

// adopt makes a stored log live in this Coordinator, closing what a crash
// left open. The caller holds s.io.
func (c *Coordinator) adopt(ctx context.Context, s *session, st *Stored, depth Depth) (*Log, error) {
	if err := ValidateHeader(st.Header); err != nil {
		return nil, fmt.Errorf("load session %s: %w", s.id, err)
	}
	if st.Header.ID != s.id {
		return nil, fmt.Errorf("%w: log for session %s carries id %q", ErrCorrupt, s.id, st.Header.ID)
	}
	shape, err := shapeOf(st.Events, depth)
	if err != nil {
		return nil, fmt.Errorf("%w: session %s: %v", ErrCorrupt, s.id, err)
	}
	events := st.Events
	closers := shape.closers()
	if st.TornMarker != nil || len(closers) > 0 {
		err := c.store.CommitRepair(ctx, Repair{Header: st.Header, TornMarker: st.TornMarker, Closers: closers})
		if err != nil {
			return nil, fmt.Errorf("repair session %s: %w", s.id, err)
		}
		events = append(events, closers...)
		shape = Shape{LastSeq: shape.LastSeq + int64(len(closers))}
	}
	s.mu.Lock()
	s.header, s.materialized, s.shape, s.inited = st.Header, true, shape, true
	s.mu.Unlock()
	return &Log{Header: st.Header, Events: events}, nil
}

// live returns the live state of id, adopting it from any scope of storage
// when this Coordinator does not hold it yet. The log, read at depth, is
// returned when adoption had to read it.
func (c *Coordinator) live(ctx context.Context, id string, depth Depth) (*session, *Log, error) {
	for {
		s := c.entry(id)
		if gone, inited := s.status(); gone {
			continue
		} else if inited {
			return s, nil, nil
		}
		s.io.Lock()
		if gone, inited := s.status(); gone || inited {
			s.io.Unlock()
			continue
		}
		st, err := c.store.LoadStored(ctx, id, depth)
		var log *Log
		if err == nil {
			log, err = c.adopt(ctx, s, st, depth)
		} else {
			err = fmt.Errorf("load session %s: %w", id, err)
		}
		if err != nil {
			c.dropLocked(s)
		}
		s.io.Unlock()
		return s, log, err
	}
}

// Append implements Service.
func (c *Coordinator) Append(ctx context.Context, id string, events ...Event) error {
	if err := c.begin(); err != nil {
		return err
	}
	defer c.end()
	if err := ValidateID(id); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	batch := make([]Event, len(events))
	copy(batch, events)
	for i := range batch {
		if err := checkEvent(i, &batch[i]); err != nil {
			return fmt.Errorf("append to session %s: %w", id, err)
		}
	}
	for {
		// Adoption reads the whole log, so an append never extends a log
		// whose committed events do not all decode; a session adopted by
		// LoadTail is appended to as it stands.
		s, _, err := c.live(ctx, id, WithEvents)
		if err != nil {
			return err
		}
		p, lead, err := c.enqueue(s, batch)
		if err != nil {
			return err
		}
		if p == nil {
			continue // s went away meanwhile
		}
		if lead {
			c.flush(ctx, s)
		}
		return <-p.done
	}
}

// enqueue assigns sequence numbers and checks nesting against everything
// already accepted, then queues the batch. lead reports whether the caller
// must flush the queue.
func (c *Coordinator) enqueue(s *session, batch []Event) (p *pending, lead bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return nil, false, nil
	}
	shape := s.shape
	evs := make([]Event, len(batch))
	for i, e := range batch {
		want := shape.LastSeq + 1
		if e.Seq != 0 && e.Seq != want {
			return nil, false, fmt.Errorf("%w: append to session %s: event %d has seq %d, next is %d (leave Seq zero)", ErrInvalid, s.id, i, e.Seq, want)
		}
		e.Seq = want
		if shape, err = shape.next(e); err != nil {
			return nil, false, fmt.Errorf("%w: append to session %s: %v", ErrInvalid, s.id, err)
		}
		evs[i] = e
	}
	s.shape = shape
	p = &pending{events: evs, done: make(chan error, 1)}
	s.queue = append(s.queue, p)
	if !s.flushing {
		s.flushing = true
		lead = true
	}
	return p, lead, nil
}

// flush writes queued batches until the queue is empty, one storage call per
// round, so concurrent appenders share one durable write (group commit).
// The write is not cancelled by the leader's context: it carries other
// callers' events too.
func (c *Coordinator) flush(ctx context.Context, s *session) {
	ctx = context.WithoutCancel(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) > 0 {
		round := s.queue
		s.queue = nil
		b := Batch{Header: s.header, Materialize: !s.materialized}
		for _, p := range round {
			b.Events = append(b.Events, p.events...)
		}
		s.mu.Unlock()
		s.io.Lock()
		var err error
		if s.isGone() {
			err = fmt.Errorf("%w: session %s was deleted", ErrNotFound, s.id)
		} else if err = c.store.AppendBatch(ctx, b); err != nil {
			err = fmt.Errorf("append to session %s: %w", s.id, err)
		} else {
			// Set under io, so a Delete never sees a written log as
			// unmaterialized.
			s.mu.Lock()
			s.materialized = true
			s.mu.Unlock()
		}
		s.io.Unlock()
		s.mu.Lock()
		if err != nil {
			// What reached storage is unknown now: fail everything queued
			// and re-read the log (repairing it) on the next call.
			round = append(round, s.queue...)
			s.queue = nil
			if !s.gone {
				c.drop(s)
			}
		}
		for _, p := range round {
			p.done <- err
		}
	}
	s.flushing = false
}

// Load implements Service.
func (c *Coordinator) Load(ctx context.Context, id string) (*Log, error) {
	return c.load(ctx, id, WithEvents)
}

// LoadTail implements Service.
func (c *Coordinator) LoadTail(ctx context.Context, id string) (*Log, error) {
	return c.load(ctx, id, LastTurn)
}

func (c *Coordinator) load(ctx context.Context, id string, depth Depth) (*Log, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	defer c.end()
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	for {
		s, log, err := c.live(ctx, id, depth)
		if err != nil || log != nil {
			return log, err
		}
		if log, retry, err := c.loadLive(ctx, s, depth); !retry {
			return log, err
		}
	}
}

// loadLive reads a session this Coordinator already holds. Its open turn, if
// any, is in progress rather than crashed, so only a torn fragment is
// repaired.
func (c *Coordinator) loadLive(ctx context.Context, s *session, depth Depth) (*Log, bool, error) {
	s.io.Lock()
	defer s.io.Unlock()
	s.mu.Lock()
	gone, h, materialized := s.gone, s.header, s.materialized
	s.mu.Unlock()
	switch {
	case gone:
		return nil, true, nil
	case !materialized:
		return &Log{Header: h}, false, nil
	}
	st, err := c.store.LoadLive(ctx, s.id, h.Cwd, depth)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			c.dropLocked(s)
		}
		return nil, false, fmt.Errorf("load session %s: %w", s.id, err)
	}
	if !st.Header.equal(h) {
		return nil, false, fmt.Errorf("%w: session %s: stored header changed under a live session", ErrCorrupt, s.id)
	}
	if _, err := shapeOf(st.Events, depth); err != nil {
		return nil, false, fmt.Errorf("%w: session %s: %v", ErrCorrupt, s.id, err)
	}
	if st.TornMarker != nil {
		if err := c.store.CommitRepair(ctx, Repair{Header: h, TornMarker: st.TornMarker}); err != nil {
			return nil, false, fmt.Errorf("repair session %s: %w", s.id, err)
		}
	}
	return &Log{Header: h, Events: st.Events}, false, nil
}

// Has implements Service. A session this Coordinator holds is looked up in
// its own cwd scope; any other id in every scope.
func (c *Coordinator) Has(ctx context.Context, id string) (bool, error) {
	if err := c.begin(); err != nil {
		return false, err
	}
	defer c.end()
	if err := ValidateID(id); err != nil {
		return false, err
	}
	var err error
	if found, known := c.hasLive(ctx, id, &err); known {
		return found, err
	}
	_, err = c.store.LoadStored(ctx, id, HeaderOnly)
	return present(id, err)
}

func (c *Coordinator) hasLive(ctx context.Context, id string, errp *error) (found, known bool) {
	c.mu.Lock()
	s := c.sessions[id]
	c.mu.Unlock()
	if s == nil {
		return false, false
	}
	s.io.Lock()
	defer s.io.Unlock()
	s.mu.Lock()
	gone, inited, h, materialized := s.gone, s.inited, s.header, s.materialized
	s.mu.Unlock()
	switch {
	case gone || !inited:
		return false, false
	case !materialized:
		return false, true
	}
	_, err := c.store.LoadLive(ctx, id, h.Cwd, HeaderOnly)
	found, *errp = present(id, err)
	return found, true
}

func present(id string, err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("look up session %s: %w", id, err)
	}
}

// Delete implements Service. Appends still queued for the session fail.
func (c *Coordinator) Delete(ctx context.Context, id string) error {
	if err := c.begin(); err != nil {
		return err
	}
	defer c.end()
	if err := ValidateID(id); err != nil {
		return err
	}
	for {
		if retry, err := c.delete(ctx, c.entry(id)); !retry {
			return err
		}
	}
}

func (c *Coordinator) delete(ctx context.Context, s *session) (retry bool, err error) {
	s.io.Lock()
	defer s.io.Unlock()
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return true, nil
	}
	unmaterialized := s.inited && !s.materialized
	for _, p := range s.queue {
		p.done <- fmt.Errorf("%w: session %s was deleted", ErrNotFound, s.id)
	}
	s.queue = nil
	c.drop(s)
	s.mu.Unlock()
	if unmaterialized {
		return false, nil
	}
	if err := c.store.DeleteStored(ctx, s.id); err != nil {
		return false, fmt.Errorf("delete session %s: %w", s.id, err)
	}
	return false, nil
}

// List implements Service.
func (c *Coordinator) List(ctx context.Context) ([]Header, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	defer c.end()
	hs, err := c.store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].ID < hs[j].ID })
	return hs, nil
}

// Close implements Service: new calls fail with ErrClosed, calls in flight
// (and the appends they queued) finish, then the storage is closed.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.ops.Wait()
	return c.store.Close()
}

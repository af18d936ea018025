// Package memory is the in-process sessionlog backend: the reference
// implementation of the Storage hooks, used in tests and dry runs. It keeps
// each log in its stored (encoded) form, so values round-trip exactly as
// they do on disk.
package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/tether-run/tether/internal/sessionlog"
)

// Store holds logs in memory. Its data outlives a Coordinator, so closing
// one and opening another over the same Store models a process restart.
type Store struct {
	mu   sync.Mutex
	logs map[string]*record
	// before, when set (by tests only), runs before every change to a log,
	// named by op; an error fails the change before it happens.
	before sessionlog.Hook
}

type record struct {
	header []byte
	lines  [][]byte
	// torn is a fragment that was never fully written (see Tear).
	torn [][]byte
}

var _ sessionlog.Storage = (*Store)(nil)

// New returns an empty Store.
func New() *Store { return &Store{logs: map[string]*record{}} }

// Open returns a session log over a new, empty Store.
func Open() *sessionlog.Coordinator { return sessionlog.NewCoordinator(New()) }

// Tear leaves events at the tail of id's log as a fragment that was never
// fully written, the state a crash mid-append leaves behind.
func (s *Store) Tear(id string, events ...sessionlog.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.logs[id]
	if !ok {
		return fmt.Errorf("memory: tear %s: %w", id, sessionlog.ErrNotFound)
	}
	for _, e := range events {
		b, err := sessionlog.EncodeEvent(e)
		if err != nil {
			return err
		}
		r.torn = append(r.torn, b)
	}
	return nil
}

// Corrupt replaces the stored form of the event at index i of id's log.
func (s *Store) Corrupt(id string, i int, raw []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.logs[id]
	if !ok || i >= len(r.lines) {
		return fmt.Errorf("memory: corrupt %s[%d]: %w", id, i, sessionlog.ErrNotFound)
	}
	r.lines[i] = raw
	return nil
}

func (s *Store) load(id string, cwd *string, depth sessionlog.Depth) (*sessionlog.Stored, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.logs[id]
	if !ok {
		return nil, fmt.Errorf("memory: %s: %w", id, sessionlog.ErrNotFound)
	}
	h, err := sessionlog.DecodeHeader(r.header)
	if err != nil {
		return nil, fmt.Errorf("memory: session %s: %w", id, err)
	}
	if cwd != nil && h.Cwd != *cwd {
		return nil, fmt.Errorf("memory: %s in cwd %q: %w", id, *cwd, sessionlog.ErrNotFound)
	}
	st := &sessionlog.Stored{Header: h}
	if depth == sessionlog.HeaderOnly {
		return st, nil
	}
	from := 0
	if depth == sessionlog.LastTurn {
		from = lastTurnStart(r.lines)
	}
	st.Events = make([]sessionlog.Event, 0, len(r.lines)-from)
	for i, line := range r.lines[from:] {
		i += from
		e, err := sessionlog.DecodeEvent(line)
		if err != nil {
			return nil, fmt.Errorf("%w: memory: %s event %d: %v", sessionlog.ErrCorrupt, id, i, err)
		}
		st.Events = append(st.Events, e)
	}
	if len(r.torn) > 0 {
		st.TornMarker = len(r.lines)
	}
	return st, nil
}

// LoadStored implements sessionlog.Storage.
func (s *Store) LoadStored(_ context.Context, id string, depth sessionlog.Depth) (*sessionlog.Stored, error) {
	return s.load(id, nil, depth)
}

// LoadLive implements sessionlog.Storage.
func (s *Store) LoadLive(_ context.Context, id, cwd string, depth sessionlog.Depth) (*sessionlog.Stored, error) {
	return s.load(id, &cwd, depth)
}

func encodeAll(events []sessionlog.Event) ([][]byte, error) {
	out := make([][]byte, len(events))
	for i, e := range events {
		b, err := sessionlog.EncodeEvent(e)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// encodeWrite encodes events for a write to log id, then runs the test
// hook's "write" step; call ("append", "repair") names the write in its
// error.
func (s *Store) encodeWrite(call, id string, events []sessionlog.Event) ([][]byte, error) {
	lines, err := encodeAll(events)
	if err != nil {
		return nil, err
	}
	if err := s.before.Step("write"); err != nil {
		return nil, fmt.Errorf("memory: %s %s: %w", call, id, err)
	}
	return lines, nil
}

// AppendBatch implements sessionlog.Storage.
func (s *Store) AppendBatch(_ context.Context, b sessionlog.Batch) error {
	lines, err := s.encodeWrite("append", b.Header.ID, b.Events)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.logs[b.Header.ID]
	switch {
	case b.Materialize && ok:
		return fmt.Errorf("memory: create %s: already exists", b.Header.ID)
	case b.Materialize:
		h, err := sessionlog.EncodeHeader(b.Header)
		if err != nil {
			return err
		}
		s.logs[b.Header.ID] = &record{header: h, lines: lines}
	case !ok:
		return fmt.Errorf("memory: append %s: %w", b.Header.ID, sessionlog.ErrNotFound)
	default:
		r.lines = append(r.lines, lines...)
	}
	return nil
}

// CommitRepair implements sessionlog.Storage.
func (s *Store) CommitRepair(_ context.Context, rp sessionlog.Repair) error {
	lines, err := s.encodeWrite("repair", rp.Header.ID, rp.Closers)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.logs[rp.Header.ID]
	if !ok {
		return fmt.Errorf("memory: repair %s: %w", rp.Header.ID, sessionlog.ErrNotFound)
	}
	if rp.TornMarker != nil {
		n, ok := rp.TornMarker.(int)
		if !ok || n != len(r.lines) {
			return fmt.Errorf("memory: repair %s: torn marker %v does not match the log", rp.Header.ID, rp.TornMarker)
		}
		r.torn = nil
	}
	r.lines = append(r.lines, lines...)
	return nil
}

// DeleteStored implements sessionlog.Storage.
func (s *Store) DeleteStored(_ context.Context, id string) error {
	if err := s.before.Step("delete"); err != nil {
		return fmt.Errorf("memory: delete %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.logs[id]; !ok {
		return fmt.Errorf("memory: delete %s: %w", id, sessionlog.ErrNotFound)
	}
	delete(s.logs, id)
	return nil
}

// List implements sessionlog.Storage.
func (s *Store) List(context.Context) ([]sessionlog.Header, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]sessionlog.Header, 0, len(s.logs))
	for id, r := range s.logs {
		h, err := sessionlog.DecodeHeader(r.header)
		if err != nil {
			return nil, fmt.Errorf("memory: session %s: %w", id, err)
		}
		out = append(out, h)
	}
	return out, nil
}

// Close implements sessionlog.Storage. The data stays for the next Open.
func (s *Store) Close() error { return nil }

// lastTurnStart is the index of the last line that decodes as a turn/start,
// 0 when there is none.
func lastTurnStart(lines [][]byte) int {
	for i := len(lines) - 1; i > 0; i-- {
		if e, err := sessionlog.DecodeEvent(lines[i]); err == nil && e.Kind == sessionlog.KindTurnStart {
			return i
		}
	}
	return 0
}

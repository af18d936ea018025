package sessionlog

import "context"

// Depth says how much of a stored log a load hook must read.
type Depth int

const (
	// HeaderOnly reads just the header: enough to prove existence and scope.
	HeaderOnly Depth = iota
	// WithEvents reads every committed event as well.
	WithEvents
	// LastTurn reads the header and the committed events from the last
	// turn/start on: what resuming a session needs, at a cost that follows
	// the last turn rather than the whole log. A backend may return more
	// (from an earlier turn/start, or from the first event); a log without
	// any turn/start returns every event.
	LastTurn
)

// Stored is a log as a storage backend found it.
type Stored struct {
	Header Header
	// Events is the committed prefix, in order (empty for HeaderOnly); for
	// LastTurn, the end of it that begins at a turn/start or at the first
	// event. The Coordinator checks its sequence numbers and nesting.
	Events []Event
	// TornMarker is non-nil when a fragment that was never fully written
	// follows Events. It is opaque to the Coordinator, which only tests it
	// against nil and hands it back to CommitRepair; a zero value (offset 0,
	// seq 0) is a valid marker.
	TornMarker any
}

// Batch is one durable append. When Materialize is set the log does not
// exist yet and must be created together with these events, atomically: a
// crash leaves either no log or the header with every event of the batch.
// Creating must fail (not overwrite) if a log with the id already exists.
type Batch struct {
	Header      Header
	Materialize bool
	Events      []Event
}

// Repair closes a crashed log: discard the torn fragment at TornMarker (when
// non-nil), then durably append Closers (which may be empty).
type Repair struct {
	Header     Header
	TornMarker any
	Closers    []Event
}

// Storage is what a backend implements. The Coordinator serializes all calls
// for one session id; calls for different ids may run concurrently.
//
// Not-found contract: LoadStored, LoadLive and DeleteStored return an error
// wrapping ErrNotFound only when the log genuinely does not exist (ENOENT or
// no row). Any other fault is returned as itself, wrapped with context, so
// that errors.Is still sees the cause (syscall.EACCES, syscall.ENOTDIR, ...).
type Storage interface {
	// LoadStored finds id in any cwd scope.
	LoadStored(ctx context.Context, id string, depth Depth) (*Stored, error)
	// LoadLive finds id only in the scope of cwd; an empty cwd is the
	// definite no-cwd scope, never "any".
	LoadLive(ctx context.Context, id, cwd string, depth Depth) (*Stored, error)
	AppendBatch(ctx context.Context, b Batch) error
	CommitRepair(ctx context.Context, r Repair) error
	// DeleteStored removes id from whichever scope holds it.
	DeleteStored(ctx context.Context, id string) error
	// List returns the header of every stored log.
	List(ctx context.Context) ([]Header, error)
	Close() error
}

// Hook is a storage's test hook: when set (by tests only), it runs before
// each primitive operation that changes stored data or makes it durable,
// named by op, and an error it returns fails the operation before it
// runs. Tests fail, block or crash a write at an exact point with it.
type Hook func(op string) error

// Step runs h, if set, before the operation op.
func (h Hook) Step(op string) error {
	if h == nil {
		return nil
	}
	return h(op)
}

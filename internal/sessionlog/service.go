package sessionlog

import "context"

// Service is the session log API. Coordinator implements it for every
// backend; a backend with its own orchestration may implement it directly,
// provided it passes the contracttest suite.
type Service interface {
	// Create registers a session. Nothing is stored until the first Append.
	// If a log with the same id and an identical header already exists in
	// the header's cwd scope it is adopted (after crash repair); a log with
	// that id anywhere else, or with another header, is ErrCollision.
	Create(ctx context.Context, h Header) error
	// Append durably appends events, assigning contiguous sequence numbers.
	// A session not created in this process is adopted from storage first.
	Append(ctx context.Context, id string, events ...Event) error
	// Load returns the session's balanced log, repairing a crashed one.
	Load(ctx context.Context, id string) (*Log, error)
	// LoadTail is Load for a caller that needs only the end of the log:
	// the header and the events from the last turn/start on (every event
	// when no turn has started), repaired like Load's. Its cost follows the
	// last turn, not the length of the session.
	LoadTail(ctx context.Context, id string) (*Log, error)
	// List returns the headers of every stored log, sorted by id.
	List(ctx context.Context) ([]Header, error)
	// Has reports whether a log for id is stored.
	Has(ctx context.Context, id string) (bool, error)
	// Delete removes the session's log; ErrNotFound if there is none.
	Delete(ctx context.Context, id string) error
	// Close waits for in-flight appends, then releases the storage.
	Close() error
}

// Package contracttest is the conformance suite every sessionlog backend
// runs (Run), so the behaviour the Coordinator promises is proven against
// real storage, not only a model of it. Backend packages keep their own
// tests to storage mechanics.
package contracttest

import (
	"testing"

	"github.com/tether-run/tether/internal/sessionlog"
)

// Harness gives the suite one backend's storage and ways to damage it the
// way real failures do.
type Harness struct {
	// Open returns storage hooks over the harness's data. Every call models
	// a new process over the same data; the suite closes the previous
	// storage first.
	Open func(t *testing.T) (sessionlog.Storage, error)
	// Tear leaves a real torn write at the tail of id's log: the writer
	// was appending e (its Seq set) and died before the write completed
	// (a line cut short, a transaction never committed). Storage is closed.
	Tear func(t *testing.T, id string, e sessionlog.Event)
	// Corrupt damages, in place, the committed record of id's log with
	// sequence number seq. Storage is closed.
	Corrupt func(t *testing.T, id string, seq int64)
	// NotDir, when set, puts a regular file where the storage expects a
	// directory (storage is closed), so lookups or Open meet ENOTDIR.
	// Backends without directories leave it nil.
	NotDir func(t *testing.T)
}

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
	// Intercept installs before in storage that Open returned. It runs
	// before every primitive operation that changes stored data or makes it
	// durable (a write or the second half of one, an fsync, link or
	// truncate, an SQL statement, a COMMIT), named by op; when it returns
	// an error the operation fails with that error instead of running.
	// With it a test fails, blocks or crashes a write at an exact point.
	Intercept func(st sessionlog.Storage, before func(op string) error)
	// Crash, when set, runs b as one AppendBatch in a child process over
	// the harness's data and kills that process with SIGKILL just before
	// its step-th intercepted operation (counted from 1); see CrashInChild.
	// It reports false when the batch committed in fewer operations.
	// Storage that does not outlive its process leaves it nil.
	Crash func(t *testing.T, b sessionlog.Batch, step int) bool
	// PutRaw stores a log of id under cwd the way a writer of another
	// build would: header and events are stored records (JSON objects)
	// that this build may be unable to decode. Storage is closed.
	PutRaw func(t *testing.T, id, cwd string, header []byte, events [][]byte)
	// Snapshot returns all stored data in a canonical form, so a test can
	// prove that an operation left storage untouched. Storage is closed.
	Snapshot func(t *testing.T) []byte
}

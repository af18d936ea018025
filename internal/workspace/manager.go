package workspace

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/treepolicy"
)

// Manager keeps the workspaces of one worker: per run, a local object store
// under Dir; per working directory, what it holds. One visit at a time
// uses a working directory.
type Manager struct {
	dir    string
	blobs  blob.Store
	lim    Limits
	logger *slog.Logger
	redact treepolicy.RedactMode

	mu     sync.Mutex
	stores map[string]*objectStore // by run
	dirs   map[string]*liveDir     // by working directory
}

// liveDir is what this process knows about one working directory.
type liveDir struct {
	lock chan struct{}
	idx  *index
	// clean means the directory holds exactly idx.Commit: nothing touched
	// it since this process restored or snapshotted it.
	clean bool
}

// Option changes how a manager works.
type Option func(*Manager)

// WithRedact sets what a snapshot does with a credential the run's source
// did not track: RedactDetect (the default) leaves it out and names it in
// the notes, RedactRefuse fails the snapshot with ErrSecret. It is the
// worker's TETHER_REDACT, as for its session packers.
func WithRedact(mode treepolicy.RedactMode) Option {
	return func(m *Manager) { m.redact = mode }
}

// NewManager returns a manager keeping its caches under dir.
func NewManager(dir string, blobs blob.Store, lim Limits, logger *slog.Logger, opts ...Option) *Manager {
	if logger == nil {
		logger = slog.Default()
	}
	m := &Manager{
		dir: dir, blobs: blobs, lim: lim.withDefaults(), logger: logger,
		stores: map[string]*objectStore{}, dirs: map[string]*liveDir{},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Limits returns the limits the manager enforces.
func (m *Manager) Limits() Limits { return m.lim }

// Workspace is one working directory of one run, held by one visit until
// Close.
type Workspace struct {
	m       *Manager
	run     string
	workdir string
	live    *liveDir
	store   *objectStore
	// fromSource marks the import of the run's source: its files are
	// the source's, so credential-shaped ones are kept (and noted).
	fromSource bool
}

// Open takes the working directory workdir of run for one visit, waiting
// while another visit holds it.
func (m *Manager) Open(ctx context.Context, run, workdir string) (*Workspace, error) {
	if err := runstore.ValidateRunID(run); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(workdir)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	ld := m.dirs[abs]
	if ld == nil {
		ld = &liveDir{lock: make(chan struct{}, 1)}
		m.dirs[abs] = ld
	}
	m.mu.Unlock()
	select {
	case ld.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	w := &Workspace{m: m, run: run, workdir: abs, live: ld}
	if err := w.open(); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

func (w *Workspace) open() error {
	if err := os.MkdirAll(w.workdir, 0o700); err != nil {
		return fmt.Errorf("workspace: create %s: %w", w.workdir, err)
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	s := w.m.stores[w.run]
	if s == nil {
		var err error
		if s, err = openStore(filepath.Join(w.m.dir, w.run, "packs"), w.m.lim.scan()); err != nil {
			return fmt.Errorf("workspace: local store of run %s: %w", w.run, err)
		}
		w.m.stores[w.run] = s
	}
	w.store = s
	return nil
}

// Dir is the working directory.
func (w *Workspace) Dir() string { return w.workdir }

// Close lets the next visit take the directory.
func (w *Workspace) Close() {
	if w.live != nil {
		<-w.live.lock
		w.live = nil
	}
}

// Touched records that something may have changed the directory (a visit
// started in it), so the next Restore checks it instead of trusting it.
func (w *Workspace) Touched() { w.live.clean = false }

func (w *Workspace) index() *index {
	if w.live.idx == nil {
		w.live.idx = emptyIndex()
	}
	return w.live.idx
}

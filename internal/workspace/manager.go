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
	// onEvict is told of every evicted run (WithEvicted).
	onEvict func(run string)

	mu     sync.Mutex
	stores map[string]*objectStore // by run
	dirs   map[string]*liveDir     // by working directory
	// tick orders uses, for evicting the least recently used.
	tick uint64
}

// A worker serves runs without end, so what it keeps of finished ones is
// bounded: beyond these, the least recently used run's object store (its
// object map and its cached packs on disk) and working directory (its
// index and its files) are dropped once no visit uses them. Both are
// caches: a later visit fetches the run's packs and restores its files
// again. Pack files are closed as soon as no visit of the run is open.
const (
	maxIdleStores = 32
	maxIdleDirs   = 64
)

// CachedRuns and CachedDirs are those bounds, for whoever checks what a
// worker keeps (the soak): at most CachedRuns idle runs' stores and
// session roots, and CachedDirs idle working directories, besides the
// ones in use.
const (
	CachedRuns = maxIdleStores
	CachedDirs = maxIdleDirs
)

// liveDir is what this process knows about one working directory.
type liveDir struct {
	lock chan struct{}
	// refs counts the visits holding or waiting for the directory (under
	// Manager.mu); one with refs is never evicted.
	refs int
	used uint64
	idx  *index
	// clean means the directory holds exactly idx.Commit: nothing touched
	// it since this process restored or snapshotted it.
	clean bool
	// evicting is set while an evicted directory's files are removed.
	evicting bool
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

// WithEvicted calls f with a run's id when the manager evicts the run (no
// visit of it is open), so that what else a worker keeps of the run (its
// live session roots) goes with it. f runs with the manager locked and
// must not call back into it.
func WithEvicted(f func(run string)) Option {
	return func(m *Manager) { m.onEvict = f }
}

// NewManager returns a manager keeping its caches under dir.
func NewManager(dir string, blobs blob.Store, lim Limits, logger *slog.Logger, opts ...Option) *Manager {
	if logger == nil {
		logger = slog.Default()
	}
	m := &Manager{
		dir: dir, blobs: blobs, lim: withDefaults(lim), logger: logger,
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
	ld.refs++
	m.mu.Unlock()
	select {
	case ld.lock <- struct{}{}:
	case <-ctx.Done():
		m.mu.Lock()
		ld.refs--
		m.mu.Unlock()
		return nil, ctx.Err()
	}
	w := &Workspace{m: m, run: run, workdir: abs, live: ld}
	if err := w.open(ctx); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

func (w *Workspace) open(ctx context.Context) error {
	if err := os.MkdirAll(w.workdir, 0o700); err != nil {
		return fmt.Errorf("workspace: create %s: %w", w.workdir, err)
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	s := w.m.stores[w.run]
	if s == nil {
		var err error
		if s, err = openStore(ctx, filepath.Join(w.m.dir, w.run, "packs"), scanLimitsOf(w.m.lim)); err != nil {
			return fmt.Errorf("workspace: local store of run %s: %w", w.run, err)
		}
		w.m.stores[w.run] = s
	}
	s.users++
	w.store = s
	return nil
}

// release ends a visit's use of its run's store and directory: the pack
// files close when no visit of the run is open, and the least recently
// used idle runs and directories beyond the caps are dropped.
func (m *Manager) release(w *Workspace) {
	m.mu.Lock()
	m.tick++
	if s := w.store; s != nil {
		s.used = m.tick
		if s.users--; s.users == 0 {
			s.closeFiles()
		}
	}
	w.live.used = m.tick
	w.live.refs--
	doomed := m.evict()
	m.mu.Unlock()
	for _, d := range doomed {
		m.remove(d)
	}
}

// doomedDir is an evicted working directory whose files are to go, with
// its lock held so that no visit uses it meanwhile.
type doomedDir struct {
	path string
	live *liveDir
}

// evict drops the least recently used idle stores and directories over
// the caps, on disk too: a worker's disk must not fill with runs that
// ended long ago. A store's cached packs go at once; a directory is
// locked and returned, for release to remove outside Manager.mu. Called
// with m.mu held.
func (m *Manager) evict() []doomedDir {
	for idle := countIdle(m.stores, func(s *objectStore) bool { return s.users == 0 }); idle > maxIdleStores; idle-- {
		run := oldest(m.stores, func(s *objectStore) (uint64, bool) { return s.used, s.users == 0 })
		delete(m.stores, run)
		if err := os.RemoveAll(filepath.Join(m.dir, run)); err != nil {
			m.logger.Warn("workspace: could not remove an evicted run's cached packs", "run", run, "error", err)
		}
		if m.onEvict != nil {
			m.onEvict(run)
		}
	}
	var doomed []doomedDir
	idle := func(d *liveDir) bool { return d.refs == 0 && !d.evicting }
	for n := countIdle(m.dirs, idle); n > maxIdleDirs; n-- {
		dir := oldest(m.dirs, func(d *liveDir) (uint64, bool) { return d.used, idle(d) })
		ld := m.dirs[dir]
		select {
		case ld.lock <- struct{}{}:
		default:
			// The visit that just closed it still holds the lock: it goes
			// next time.
			continue
		}
		ld.evicting, ld.idx, ld.clean = true, nil, false
		doomed = append(doomed, doomedDir{dir, ld})
	}
	return doomed
}

// remove deletes an evicted directory's files, then forgets it unless a
// visit began to wait for it meanwhile (that visit restores it anew).
func (m *Manager) remove(d doomedDir) {
	if err := os.RemoveAll(d.path); err != nil {
		m.logger.Warn("workspace: could not remove an evicted working directory", "dir", d.path, "error", err)
	}
	m.mu.Lock()
	d.live.evicting = false
	if m.dirs[d.path] == d.live && d.live.refs == 0 {
		delete(m.dirs, d.path)
	}
	m.mu.Unlock()
	<-d.live.lock
}

func countIdle[V any](m map[string]V, idle func(V) bool) int {
	n := 0
	for _, v := range m {
		if idle(v) {
			n++
		}
	}
	return n
}

// oldest returns the key of the idle value used least recently.
func oldest[V any](m map[string]V, used func(V) (uint64, bool)) string {
	var key string
	best := ^uint64(0)
	for k, v := range m {
		if u, idle := used(v); idle && u <= best {
			key, best = k, u
		}
	}
	return key
}

// Dir is the working directory.
func (w *Workspace) Dir() string { return w.workdir }

// Close lets the next visit take the directory.
func (w *Workspace) Close() {
	if w.live != nil {
		w.m.release(w)
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

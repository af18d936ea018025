package activities

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/tether-run/tether/internal/agent"
	sessionpack "github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/runstore"
)

// liveSessions remembers, per live session on this worker, the digest of
// the blob last packed from it and the stat signature its main file had
// then, for as long as no visit touched it since: a restore of that very
// blob, onto a session file that still has that signature, can be skipped.
type liveSessions struct {
	mu sync.Mutex
	m  map[string]liveSession
}

type liveSession struct {
	digest, sig string
	// manifest is the session as that blob left it, when known: what an
	// incremental pack of the next visit starts from.
	manifest *sessionpack.Manifest
}

// incrementalPacker is a packer that packs and restores incremental
// packs (every backend's, which is the shared packer).
type incrementalPacker interface {
	PackDelta(ctx context.Context, sessionID string, base *sessionpack.Manifest) ([]byte, *sessionpack.Manifest, error)
	UnpackParts(ctx context.Context, sessionID string, parts ...[]byte) (*sessionpack.Manifest, error)
}

// slotParts bounds a slot's incremental packs, by the size of its base.
// A visit past the bound, or whose slot's parts together outweigh its
// base, packs the whole session again: a restore fetches at most
// maxSlotParts parts, and the store holds at most about twice what the
// session packs to. Every checkpoint names each part of the slot, and of
// the superseded slot kept for rewinds, at about 60 bytes a part that do
// not compress (a key and a sha256), for as long as the run keeps its
// checkpoints; so a slot may have one part for every partBaseBytes of
// base, between minSlotParts and maxSlotParts: a small session rebases
// sooner, a large one (whose whole pack costs most) later.
const (
	minSlotParts  = 16
	maxSlotParts  = 64
	partBaseBytes = 64 << 10
)

func slotParts(baseBytes int64) int {
	return int(min(max(baseBytes/partBaseBytes, minSlotParts), maxSlotParts))
}

// extension is the slot a persist visit may add an incremental pack to:
// the node's own slot it resumed, as this worker holds it.
type extension struct {
	manifest  *sessionpack.Manifest
	last      string // the slot's LastDigest
	parts     int
	partBytes int64
	baseBytes int64
}

// whole reports whether the visit packs the whole session rather than a
// part after the slot's.
func (x *extension) whole() bool {
	return x == nil || x.manifest == nil || x.last == "" || x.parts >= slotParts(x.baseBytes) || (x.baseBytes > 0 && x.partBytes >= x.baseBytes)
}

// forget drops every live session under root.
func (l *liveSessions) forget(root string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.m {
		if strings.Contains(k, "\x00"+root+string(filepath.Separator)) {
			delete(l.m, k)
		}
	}
}

// inflightRuns counts running visits per run.
type inflightRuns struct {
	mu sync.Mutex
	n  map[string]int
}

func (f *inflightRuns) add(run string, d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	if f.n[run] += d; f.n[run] <= 0 {
		delete(f.n, run)
	}
}

func (f *inflightRuns) running(run string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[run] > 0
}

// RunForgetter returns what the workspace manager calls when it evicts a
// run from its caches (workspace.WithEvicted). It is a function, not a
// method, so that registering the activities does not take it for one.
func RunForgetter(a *Activities) func(run string) { return a.forgetRun }

// forgetRun removes what this worker keeps of a run it no longer serves:
// the run's live session roots. A later visit restores the conversation
// from the blob store, as on any other worker. A run with a visit running
// here is left alone.
func (a *Activities) forgetRun(run string) {
	if a.inflight.running(run) || runstore.ValidateRunID(run) != nil {
		return
	}
	root := filepath.Join(a.StateDir, "runs", run)
	a.live.forget(root)
	if err := os.RemoveAll(root); err != nil {
		a.logger().Warn("could not remove the live sessions of an evicted run", "run", run, "error", err)
	}
}

// sessionFiler is implemented by packers that can name a session's main
// file (the transcript the CLI resumes from).
type sessionFiler interface {
	SessionFile(ctx context.Context, sessionID string) (string, error)
}

// signature is what a live session looks like on disk: its main file's
// size, modification time and inode; "" when it is not there.
func signature(ctx context.Context, p agent.SessionPacker, sessionID string) string {
	sf, ok := p.(sessionFiler)
	if !ok {
		if p.HasSession(ctx, sessionID) {
			return "present"
		}
		return ""
	}
	path, err := sf.SessionFile(ctx, sessionID)
	if err != nil {
		return ""
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%d/%d/%d", fi.Size(), fi.ModTime().UnixNano(), ino)
}

func liveKey(backendName string, env agent.Env, sessionID string) string {
	return backendName + "\x00" + env.StateRoot + "\x00" + env.Workdir + "\x00" + sessionID
}

func (l *liveSessions) get(key string) liveSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[key]
}

func (l *liveSessions) set(key string, s liveSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]liveSession{}
	}
	if s.digest == "" || s.sig == "" {
		delete(l.m, key)
		return
	}
	l.m[key] = s
}

package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/tether-run/tether/internal/runstore"
)

// Restored says what a restore did.
type Restored struct {
	// Hit is true when the directory already held the snapshot, untouched:
	// nothing was read or written.
	Hit bool
	// Fetched counts the pack bytes downloaded from the blob store.
	Fetched int64
	// Written and Removed count the files changed in the directory.
	Written, Removed int
}

// target is one file of the snapshot being restored.
type target struct {
	path string
	mode filemode.FileMode
	hash plumbing.Hash
	size int64
	link string
}

// Restore makes the working directory hold the snapshot want: every file of
// it, with its content and mode, and no other file a snapshot would hold
// (files a .gitignore ignores are left alone, as git leaves them). The
// whole snapshot is checked first; a refused one leaves the directory as it
// was.
func (w *Workspace) Restore(ctx context.Context, want *runstore.WorkspaceState) (Restored, error) {
	var rep Restored
	if want == nil {
		want = &runstore.WorkspaceState{}
	}
	if w.holds(want.Commit) {
		rep.Hit = true
		return rep, nil
	}
	targets, trees, fetched, err := w.load(ctx, want)
	rep.Fetched = fetched
	if err != nil {
		return rep, err
	}
	return w.restoreLoaded(ctx, want, targets, trees, rep)
}

// holds reports whether the directory holds commit as this process left
// it: a restore to it has nothing to do.
func (w *Workspace) holds(commit string) bool {
	return w.live.clean && w.index().Commit == commit
}

// restoreLoaded is Restore once want's snapshot is loaded and checked
// (its targets and trees); rep carries what the load fetched.
func (w *Workspace) restoreLoaded(ctx context.Context, want *runstore.WorkspaceState, targets []target, trees map[string]plumbing.Hash, rep Restored) (Restored, error) {
	x := w.index()
	// What is there now.
	taken := time.Now().UnixNano()
	sc, err := scanTree(ctx, w.workdir, scanOpts{lim: w.m.lim, tracked: x.tracked, trackedDir: x.trackedDir})
	if err != nil {
		return rep, err
	}
	have := make(map[string]fileInfo, len(sc.files))
	for _, f := range sc.files {
		have[f.path] = f
	}
	want2 := make(map[string]bool, len(targets))
	for _, t := range targets {
		want2[t.path] = true
	}
	root, err := os.OpenRoot(w.workdir)
	if err != nil {
		return rep, err
	}
	defer root.Close()
	// Remove what the snapshot does not hold, deepest first.
	for i := len(sc.files) - 1; i >= 0; i-- {
		f := sc.files[i]
		if want2[f.path] {
			continue
		}
		if err := root.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("workspace: remove %s: %w", f.path, err)
		}
		rep.Removed++
	}
	files := make([]indexFile, 0, len(targets))
	var links, pending []target
	parents := map[string]bool{}
	for _, t := range targets {
		// Every file: one may be 256 MiB to inflate and write.
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if cur, ok := have[t.path]; ok && cur.mode == t.mode {
			h, _, _, err := w.hashOf(x, cur)
			if err != nil {
				return rep, err
			}
			if h == t.hash {
				files = append(files, fromScan(cur, h))
				continue
			}
		}
		if t.mode == filemode.Symlink {
			links = append(links, t)
			continue
		}
		if err := makeParents(root, t.path, parents); err != nil {
			return rep, err
		}
		pending = append(pending, t)
	}
	written, err := w.writeAll(ctx, root, pending)
	if err != nil {
		return rep, err
	}
	files = append(files, written...)
	rep.Written += len(written)
	// Links last, so no file above was written through one.
	for _, t := range links {
		if err := makeParents(root, t.path, parents); err != nil {
			return rep, err
		}
		if err := removeAny(root, t.path); err != nil {
			return rep, err
		}
		if err := root.Symlink(t.link, t.path); err != nil {
			return rep, fmt.Errorf("workspace: link %s: %w", t.path, err)
		}
		fi, err := root.Lstat(t.path)
		if err != nil {
			return rep, err
		}
		files = append(files, fromScan(statInfo(t, fi), t.hash))
		rep.Written++
	}
	sortIndexFiles(files)
	next := &index{Commit: want.Commit, Taken: taken, Files: files, Trees: trees}
	next.prepare()
	w.live.idx, w.live.clean = next, true
	return rep, nil
}

// Load brings the packs of st into the workspace's object store and checks
// its commit as a restore would, without touching the directory: so that
// Stat and Diff can read the commits of several states (the branches of a
// fan-out) in one workspace.
func (w *Workspace) Load(ctx context.Context, st *runstore.WorkspaceState) error {
	if st == nil {
		return nil
	}
	_, _, _, err := w.load(ctx, st)
	return err
}

// load brings st's packs into the local store (fetched counts the bytes
// downloaded) and flattens its commit into the files it holds, checked as
// a restore checks them.
func (w *Workspace) load(ctx context.Context, st *runstore.WorkspaceState) (targets []target, trees map[string]plumbing.Hash, fetched int64, err error) {
	for _, p := range st.Packs {
		_, n, err := w.fetch(ctx, p)
		if err != nil {
			return nil, nil, fetched, err
		}
		fetched += n
	}
	targets, trees, err = w.flatten(ctx, st.Commit)
	return targets, trees, fetched, err
}

// flatten lists the files of commit, checking everything a hostile
// snapshot could hold: object types, names, paths, depth, modes, link
// targets, credential files, and the limits. It also returns the tree of
// every directory, for the next snapshot to reuse.
func (w *Workspace) flatten(ctx context.Context, commit string) ([]target, map[string]plumbing.Hash, error) {
	trees := map[string]plumbing.Hash{}
	if commit == "" {
		return nil, trees, nil
	}
	h, err := parseHash(commit)
	if err != nil {
		return nil, nil, err
	}
	content, err := w.store.readAs(h, plumbing.CommitObject)
	if err != nil {
		return nil, nil, err
	}
	root, _, _, err := decodeCommit(h, content)
	if err != nil {
		return nil, nil, err
	}
	lim := w.m.lim
	var out []target
	var total int64
	var dirs int
	var walk func(dir string, tree plumbing.Hash, depth int) error
	walk = func(dir string, tree plumbing.Hash, depth int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if depth > lim.MaxDepth {
			return fmt.Errorf("%w: %s is more than %d directories deep", ErrUnsafePath, dir, lim.MaxDepth)
		}
		if dirs++; dirs > lim.MaxFiles {
			return fmt.Errorf("%w: more than %d directories", ErrTooLarge, lim.MaxFiles)
		}
		trees[dir] = tree
		content, err := w.store.readAs(tree, plumbing.TreeObject)
		if err != nil {
			return err
		}
		entries, err := decodeTree(tree, content)
		if err != nil {
			return err
		}
		names := make(map[string]bool, len(entries))
		for _, e := range entries {
			if strings.ContainsRune(e.name, '/') || names[e.name] {
				return fmt.Errorf("%w: tree %s holds the name %q twice or with a slash", ErrCorrupt, tree, e.name)
			}
			names[e.name] = true
			p := join(dir, e.name)
			if err := checkPath(p, lim); err != nil {
				return err
			}
			if loginPath(p) {
				return fmt.Errorf("%w: %s; a snapshot never holds it", ErrDenied, p)
			}
			switch e.mode {
			case filemode.Dir:
				if err := walk(p, e.hash, depth+1); err != nil {
					return err
				}
				continue
			case filemode.Regular, filemode.Executable, filemode.Symlink:
			case filemode.Submodule:
				return fmt.Errorf("%w: %s is a submodule", ErrSpecial, p)
			default:
				return fmt.Errorf("%w: %s has mode %o", ErrSpecial, p, uint32(e.mode))
			}
			l, ok := w.store.lookup(e.hash)
			if !ok {
				return fmt.Errorf("%w: file %s (%s) is in no pack", ErrMissing, p, e.hash)
			}
			le := l.entry()
			if le.typ != plumbing.BlobObject {
				return fmt.Errorf("%w: file %s is a %s object", ErrCorrupt, p, le.typ)
			}
			if len(out) >= lim.MaxFiles {
				return fmt.Errorf("%w: more than %d files", ErrTooLarge, lim.MaxFiles)
			}
			if le.size > lim.MaxFileBytes {
				return fmt.Errorf("%w: %s is %d bytes, over the %d-byte single-file limit", ErrTooLarge, p, le.size, lim.MaxFileBytes)
			}
			if total += le.size; total > lim.MaxTotalBytes {
				return fmt.Errorf("%w: more than %d bytes of files", ErrTooLarge, lim.MaxTotalBytes)
			}
			t := target{path: p, mode: e.mode, hash: e.hash, size: le.size}
			if e.mode == filemode.Symlink {
				b, err := w.store.readAs(e.hash, plumbing.BlobObject)
				if err != nil {
					return err
				}
				t.link = string(b)
				if err := checkLink(p, t.link); err != nil {
					return err
				}
			}
			out = append(out, t)
		}
		return nil
	}
	if err := walk("", root, 0); err != nil {
		return nil, nil, err
	}
	sortTargets(out)
	return out, trees, nil
}

// A restore writes up to restoreWriters files at once, holding at most
// restoreBudget bytes of their contents (a file over it alone): creating
// a file is mostly a wait on the file system, and the waits overlap.
const (
	restoreWriters = 8
	restoreBudget  = 64 << 20
)

// writeAll writes the files ts, whose directories exist, concurrently, and
// returns their index entries in the order of ts.
func (w *Workspace) writeAll(ctx context.Context, root *os.Root, ts []target) ([]indexFile, error) {
	out := make([]indexFile, len(ts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(restoreWriters)
	budget := semaphore.NewWeighted(restoreBudget)
	for i, t := range ts {
		weight := min(max(t.size, 1), restoreBudget)
		if err := budget.Acquire(gctx, weight); err != nil {
			break // the group failed, or ctx ended: Wait and ctx say which
		}
		g.Go(func() error {
			defer budget.Release(weight)
			// Every file: one may be 256 MiB to inflate and write.
			if err := gctx.Err(); err != nil {
				return err
			}
			f, err := w.writeFile(root, t, nil)
			out[i] = f
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// writeFile writes one file of the snapshot. Where nothing is, it creates
// the file; over an existing file it writes a new temporary file beside it
// and renames it over, so a reader never sees a half-written file.
func (w *Workspace) writeFile(root *os.Root, t target, parents map[string]bool) (indexFile, error) {
	content, err := w.store.readAs(t.hash, plumbing.BlobObject)
	if err != nil {
		return indexFile{}, err
	}
	return writeContent(root, t, content, parents)
}

// writeContent writes content as the file t (its path and mode), as
// writeFile does.
func writeContent(root *os.Root, t target, content []byte, parents map[string]bool) (indexFile, error) {
	if parents != nil { // nil: the caller made them
		if err := makeParents(root, t.path, parents); err != nil {
			return indexFile{}, err
		}
	}
	perm := os.FileMode(0o644)
	if t.mode == filemode.Executable {
		perm = 0o755
	}
	name := t.path
	existing, lerr := root.Lstat(t.path)
	if lerr == nil {
		name = path.Join(path.Dir(t.path), fmt.Sprintf(".tether-restore-%d-%d", time.Now().UnixNano(), restoreSeq.Add(1)))
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return indexFile{}, fmt.Errorf("workspace: write %s: %w", t.path, err)
	}
	_, err = f.Write(content)
	if err == nil {
		// The umask may have taken bits off; the snapshot's mode wins.
		if fi, serr := f.Stat(); serr == nil && fi.Mode().Perm() != perm {
			err = f.Chmod(perm)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && name != t.path {
		if existing.IsDir() {
			err = root.RemoveAll(t.path)
		}
		if err == nil {
			err = root.Rename(name, t.path)
		}
	}
	if err != nil {
		_ = root.Remove(name)
		return indexFile{}, fmt.Errorf("workspace: write %s: %w", t.path, err)
	}
	fi, err := root.Lstat(t.path)
	if err != nil {
		return indexFile{}, err
	}
	return fromScan(statInfo(t, fi), t.hash), nil
}

// restoreSeq tells apart the temporary names of files written at once.
var restoreSeq atomic.Uint64

// makeParents creates the directories on the way to rel, replacing a file
// or link that stands where a directory must be (the snapshot has a
// directory there; what stood there is not part of it). made remembers the
// directories already checked in this restore.
func makeParents(root *os.Root, rel string, made map[string]bool) error {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		if made[dir] {
			continue
		}
		made[dir] = true
		fi, err := root.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case fi.IsDir():
			continue
		default:
			if err := root.Remove(dir); err != nil {
				return fmt.Errorf("workspace: replace %s with a directory: %w", dir, err)
			}
		}
		if err := root.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("workspace: create %s: %w", dir, err)
		}
	}
	return nil
}

func removeAny(root *os.Root, rel string) error {
	fi, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return root.RemoveAll(rel)
	}
	return root.Remove(rel)
}

func statInfo(t target, fi fs.FileInfo) fileInfo {
	f := fileInfo{path: t.path, mode: t.mode, size: fi.Size(), link: t.link}
	setStat(&f, fi)
	return f
}

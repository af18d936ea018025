package workspace

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/treepolicy"
)

// Snapshotted says what a snapshot did.
type Snapshotted struct {
	// Changed is false when the directory equals the snapshot it started
	// from: no commit, nothing uploaded.
	Changed bool
	Files   int
	Bytes   int64
	// Uploaded counts the pack bytes written to the blob store.
	Uploaded int64
	// Notes say what was left out and why.
	Notes []string
	// SourceCommit is the commit of the source repository an Import read
	// ("" for a directory).
	SourceCommit string
}

// Snapshot records the working directory as a commit on top of cur (which
// the directory was restored to) and ships the commit's new objects to the
// blob store. It returns the new state, or cur itself when nothing changed.
// A commit with info.Parents (a merge) is made even when the tree is
// unchanged.
func (w *Workspace) Snapshot(ctx context.Context, cur *runstore.WorkspaceState, info CommitInfo) (*runstore.WorkspaceState, Snapshotted, error) {
	var rep Snapshotted
	if cur == nil {
		cur = &runstore.WorkspaceState{}
	}
	x := w.index()
	if x.Commit != cur.Commit {
		return nil, rep, fmt.Errorf("workspace: %s holds snapshot %q, not %q; restore it before a snapshot", w.workdir, x.Commit, cur.Commit)
	}
	taken := time.Now().UnixNano()
	// leftOut applies the credential rule to p: refused, or logged and
	// returned as a note.
	leftOut := func(p, why string) (string, error) {
		if w.m.redact == treepolicy.RedactRefuse {
			return "", fmt.Errorf("%w: %s is %s. Delete it or add it to .gitignore, or set %s=detect to leave such files out of snapshots", ErrSecret, p, why, treepolicy.RedactEnv)
		}
		return fmt.Sprintf("%s: %s, not snapshotted (a snapshot keeps a credential only when the run's source tracked it)", p, why), nil
	}
	logNote := func(n string) {
		// Paths and reasons only, never content.
		w.m.logger.Warn("workspace: left out of the snapshot", "run", w.run, "note", n)
	}
	if w.fromSource {
		logNote = nil // the importer prints the notes
	}
	sc, err := scanTree(ctx, w.workdir, scanOpts{
		lim: w.m.lim, tracked: x.tracked, trackedDir: x.trackedDir, fromSource: w.fromSource, log: logNote,
		credential: func(p string, c treepolicy.Class, rule string) (string, error) {
			return leftOut(p, fmt.Sprintf("a %s (%s)", c, rule))
		},
	})
	if err != nil {
		return nil, rep, err
	}
	sortFiles(sc.files)

	b, err := newPackBuilder(w.store.dir)
	if err != nil {
		return nil, rep, err
	}
	defer b.abort()
	dirty := map[string]bool{}
	files := make([]indexFile, 0, len(sc.files))
	seen := make(map[string]bool, len(sc.files))
	rehashed := 0
	var secrets *treepolicy.Scanner // one for every file read, reset between them
	for _, f := range sc.files {
		h, content, read, err := w.hashOf(x, f)
		if err != nil {
			return nil, rep, err
		}
		if read {
			rehashed++
			old, had := x.get(f.path)
			changed := !had || old.Hash != h || old.Mode != f.mode
			if changed && f.mode != filemode.Symlink && !w.fromSource {
				// A file an agent wrote or changed: the scanner has the
				// last word. One the source tracked as it is now is
				// never re-read (its stat data is unchanged) or is
				// unchanged.
				if secrets == nil {
					secrets = treepolicy.NewScanner(1)
				} else {
					secrets.Reset()
				}
				secrets.Write(content)
				if found := secrets.Finish(); secrets.Total() > 0 {
					n, err := leftOut(f.path, fmt.Sprintf("holding a token shaped like a secret (%s, line %d)", found[0].Kind, found[0].Line))
					if err != nil {
						return nil, rep, err
					}
					sc.note("%s", n)
					sc.bytes -= f.size
					continue
				}
			}
			if changed {
				markDirty(dirty, f.path)
				if err := b.add(h, plumbing.BlobObject, content); err != nil {
					return nil, rep, err
				}
			}
		}
		seen[f.path] = true
		files = append(files, fromScan(f, h))
	}
	rep.Files, rep.Bytes, rep.Notes = len(files), sc.bytes, sc.allNotes()
	for _, old := range x.Files {
		if !seen[old.Path] {
			markDirty(dirty, old.Path)
		}
	}
	root, trees, err := buildTrees(files, dirty, x.Trees, b.add)
	if err != nil {
		return nil, rep, err
	}
	next := &index{Commit: cur.Commit, Taken: taken, Files: files, Trees: trees}
	notes := rep.Notes[:min(len(rep.Notes), runstore.MaxNotes)]
	if len(info.Parents) == 0 && ((cur.Commit != "" && root == x.Trees[""]) || (cur.Commit == "" && len(files) == 0)) {
		// Unchanged. Files hashed again keep their new stat data, so the
		// next walk trusts them.
		if rehashed > 0 {
			next.prepare()
			w.live.idx = next
		}
		w.live.clean = true
		if !slices.Equal(notes, cur.Notes) {
			// No commit, but what was left out is news for tether status.
			st := *cur
			st.Notes = slices.Clone(notes)
			return &st, rep, nil
		}
		return cur, rep, nil
	}
	commit, content, err := encodeCommit(root, cur.Commit, info)
	if err != nil {
		return nil, rep, err
	}
	if err := b.add(commit, plumbing.CommitObject, content); err != nil {
		return nil, rep, err
	}
	tmp, digest, entries, err := b.finish()
	if err != nil {
		return nil, rep, err
	}
	p, err := w.store.keep(tmp, digest, entries)
	tmp.Close()
	os.Remove(tmp.Name())
	if err != nil {
		return nil, rep, err
	}
	packs, uploaded, err := w.publish(ctx, cur.Packs, p, cur.Commit, commit.String())
	if err != nil {
		return nil, rep, err
	}
	rep.Changed, rep.Uploaded = true, uploaded
	next.Commit = commit.String()
	next.prepare()
	w.live.idx, w.live.clean = next, true
	state := &runstore.WorkspaceState{
		Commit: next.Commit, Base: cur.Base, Packs: packs,
		Files: len(files), Bytes: sc.bytes, Commits: cur.Commits + 1,
		Notes: slices.Clone(notes),
	}
	return state, rep, nil
}

// hashOf is the blob hash of the file f found by a walk: the index's, when
// the file's stat data says it is unchanged, else computed from its
// content, which is then returned too, with read set.
func (w *Workspace) hashOf(x *index, f fileInfo) (h plumbing.Hash, content []byte, read bool, err error) {
	if h, ok := x.fresh(f); ok {
		return h, nil, false, nil
	}
	if content, err = readContent(w.workdir, f); err != nil {
		return plumbing.ZeroHash, nil, false, err
	}
	return plumbing.ComputeHash(plumbing.BlobObject, content), content, true, nil
}

// readContent reads a file's blob content: a regular file's bytes or a
// symlink's target. The file is opened one directory at a time from the
// workspace root, never following a link (a directory swapped for a
// symlink since the walk cannot lead the read outside), and it must still
// be the very file the walk listed: same inode, same size, no new names.
func readContent(root string, f fileInfo) ([]byte, error) {
	if f.mode == filemode.Symlink {
		return []byte(f.link), nil
	}
	fh, err := openInTree(root, f.path)
	if err != nil {
		return nil, fmt.Errorf("workspace: read %s: %w; is a process still changing the workspace?", f.path, err)
	}
	defer fh.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(fh.Fd()), &st); err != nil {
		return nil, fmt.Errorf("workspace: read %s: %w", f.path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || uint64(st.Ino) != f.ino || uint64(st.Dev) != f.dev || uint64(st.Nlink) > max(f.nlink, 1) {
		return nil, fmt.Errorf("workspace: read %s: it was replaced while being snapshotted; is a process still changing the workspace?", f.path)
	}
	content := make([]byte, f.size)
	if _, err := io.ReadFull(fh, content); err != nil {
		return nil, fmt.Errorf("workspace: read %s: it changed while being snapshotted (%v); is a process still writing to the workspace?", f.path, err)
	}
	return content, nil
}

// openInTree opens the regular file rel under root through one directory
// descriptor per component, each opened with O_NOFOLLOW, so no symlink on
// the way or at the end is followed. O_NONBLOCK keeps a fifo swapped in
// from blocking the open.
func openInTree(root, rel string) (*os.File, error) {
	dfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	parts := strings.Split(rel, "/")
	for _, c := range parts[:len(parts)-1] {
		next, err := unix.Openat(dfd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(dfd)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
		}
		dfd = next
	}
	fd, err := unix.Openat(dfd, parts[len(parts)-1], unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	unix.Close(dfd)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, filepath.FromSlash(rel))), nil
}

func dirOf(p string) string {
	d := path.Dir(p)
	if d == "." {
		return ""
	}
	return d
}

func markDirty(dirty map[string]bool, p string) {
	for d := dirOf(p); ; d = dirOf(d) {
		if dirty[d] {
			return
		}
		dirty[d] = true
		if d == "" {
			return
		}
	}
}

// buildTrees computes the tree of every directory holding files, deepest
// first. A directory that is not dirty keeps its tree from old; every new
// tree goes to emit. It returns the root tree and the trees by directory.
func buildTrees(files []indexFile, dirty map[string]bool, old map[string]plumbing.Hash, emit func(plumbing.Hash, plumbing.ObjectType, []byte) error) (plumbing.Hash, map[string]plumbing.Hash, error) {
	entries := map[string][]treeEntry{}
	subdirs := map[string][]string{}
	known := map[string]bool{"": true}
	for _, f := range files {
		d := dirOf(f.Path)
		entries[d] = append(entries[d], treeEntry{name: path.Base(f.Path), mode: f.Mode, hash: f.Hash})
		for ; !known[d]; d = dirOf(d) {
			known[d] = true
			subdirs[dirOf(d)] = append(subdirs[dirOf(d)], d)
		}
	}
	dirs := make([]string, 0, len(known))
	for d := range known {
		dirs = append(dirs, d)
	}
	depth := func(d string) int {
		if d == "" {
			return 0
		}
		return strings.Count(d, "/") + 1
	}
	slices.SortFunc(dirs, func(a, b string) int {
		if da, db := depth(a), depth(b); da != db {
			return db - da
		}
		return strings.Compare(a, b)
	})
	trees := make(map[string]plumbing.Hash, len(dirs))
	for _, d := range dirs {
		if h, ok := old[d]; ok && !dirty[d] {
			trees[d] = h
			continue
		}
		es := entries[d]
		for _, sd := range subdirs[d] {
			es = append(es, treeEntry{name: path.Base(sd), mode: filemode.Dir, hash: trees[sd]})
		}
		h, content, err := encodeTree(es)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		if err := emit(h, plumbing.TreeObject, content); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		trees[d] = h
	}
	return trees[""], trees, nil
}

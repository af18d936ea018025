package workspace

import (
	"path"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// index is what a worker knows about one workspace directory: the commit
// it holds and, per file, the stat data it had when its content was last
// hashed. Like git's index, it lets a walk trust a file whose size, time
// and inode did not change instead of reading it again. It lives in the
// worker's memory: a restarted worker hashes each file once more.
type index struct {
	Commit string
	// Taken is when the stat data was recorded (unix nanoseconds). A file
	// modified within racyWindow before it is hashed again: its time may
	// not have moved for a change made in the same clock tick.
	Taken int64
	Files []indexFile // sorted by path
	// Trees are the tree ids of Commit's directories ("" is the root).
	Trees map[string]plumbing.Hash

	byPath map[string]int
	dirs   map[string]bool
}

type indexFile struct {
	Path  string
	Mode  filemode.FileMode
	Hash  plumbing.Hash
	Size  int64
	Mtime int64
	Ctime int64
	Ino   uint64
}

const racyWindow = int64(100 * time.Millisecond)

func (x *index) prepare() {
	x.byPath = make(map[string]int, len(x.Files))
	x.dirs = map[string]bool{}
	for i, f := range x.Files {
		x.byPath[f.Path] = i
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			if x.dirs[d] {
				break
			}
			x.dirs[d] = true
		}
	}
	if x.Trees == nil {
		x.Trees = map[string]plumbing.Hash{}
	}
}

func (x *index) get(p string) (indexFile, bool) {
	i, ok := x.byPath[p]
	if !ok {
		return indexFile{}, false
	}
	return x.Files[i], true
}

func (x *index) tracked(p string) bool    { _, ok := x.byPath[p]; return ok }
func (x *index) trackedDir(d string) bool { return x.dirs[d] }

// fresh reports whether f on disk is the file the index hashed.
func (x *index) fresh(f fileInfo) (plumbing.Hash, bool) {
	old, ok := x.get(f.path)
	if !ok || old.Mode != f.mode || old.Size != f.size || old.Mtime != f.mtime || old.Ino != f.ino || old.Ctime != f.ctime {
		return plumbing.ZeroHash, false
	}
	if f.mtime >= x.Taken-racyWindow || f.ctime >= x.Taken-racyWindow {
		return plumbing.ZeroHash, false
	}
	return old.Hash, true
}

func emptyIndex() *index {
	x := &index{}
	x.prepare()
	return x
}

func fromScan(f fileInfo, h plumbing.Hash) indexFile {
	return indexFile{Path: f.path, Mode: f.mode, Hash: h, Size: f.size, Mtime: f.mtime, Ctime: f.ctime, Ino: f.ino}
}

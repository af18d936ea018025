package workspace

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
)

// forged builds snapshots by hand, the way an attacker with write access
// to the blob store would.
type forged struct {
	t       *testing.T
	objects []forgedObject
}

type forgedObject struct {
	h       plumbing.Hash
	t       plumbing.ObjectType
	content []byte
}

func (f *forged) blob(content string) plumbing.Hash {
	h := plumbing.ComputeHash(plumbing.BlobObject, []byte(content))
	f.objects = append(f.objects, forgedObject{h, plumbing.BlobObject, []byte(content)})
	return h
}

// tree encodes entries as they are given: no sorting, no checks.
func (f *forged) tree(entries ...treeEntry) plumbing.Hash {
	var b bytes.Buffer
	for _, e := range entries {
		b.WriteString(strings.TrimLeft(e.mode.String(), "0") + " " + e.name + "\x00")
		b.Write(e.hash[:])
	}
	h := plumbing.ComputeHash(plumbing.TreeObject, b.Bytes())
	f.objects = append(f.objects, forgedObject{h, plumbing.TreeObject, b.Bytes()})
	return h
}

func (f *forged) commit(tree plumbing.Hash) plumbing.Hash {
	h, content, err := encodeCommit(tree, "", info("forged"))
	require.NoError(f.t, err)
	f.objects = append(f.objects, forgedObject{h, plumbing.CommitObject, content})
	return h
}

func (f *forged) pack() []byte {
	var buf bytes.Buffer
	pw, err := newPackWriter(&buf, len(f.objects))
	require.NoError(f.t, err)
	for _, o := range f.objects {
		require.NoError(f.t, pw.add(o.h, o.t, o.content))
	}
	err = pw.finish()
	require.NoError(f.t, err)
	return buf.Bytes()
}

// publish puts pack in the store under its digest and returns the state
// naming commit.
func publish(t *testing.T, blobs blob.Store, run string, pack []byte, commit plumbing.Hash) *runstore.WorkspaceState {
	sum := sha256.Sum256(pack)
	key := runstore.WorkspacePackKey(run, hex.EncodeToString(sum[:]))
	require.NoError(t, blob.PutBytes(context.Background(), blobs, key, pack))
	return &runstore.WorkspaceState{Commit: commit.String(), Packs: []runstore.WorkspacePack{{Key: key, Tip: commit.String(), Size: int64(len(pack))}}}
}

// victim is a worker whose workspace already holds files; a refused
// restore must leave them exactly as they are.
func victim(t *testing.T, e *env) *Workspace {
	w := e.worker("run-1")
	write(t, w.Dir(), map[string]string{"keep.txt": "precious", "dir/f": "also"})
	return w
}

func TestRestoreRefusesHostileSnapshots(t *testing.T) {
	file := func(f *forged, name, content string) treeEntry {
		return treeEntry{name: name, mode: filemode.Regular, hash: f.blob(content)}
	}
	dir := func(f *forged, name string, entries ...treeEntry) treeEntry {
		return treeEntry{name: name, mode: filemode.Dir, hash: f.tree(entries...)}
	}
	cases := []struct {
		name  string
		build func(f *forged) plumbing.Hash // returns the root tree
		want  error
	}{
		{"dot-dot entry", func(f *forged) plumbing.Hash {
			return f.tree(file(f, "..", "x"))
		}, ErrUnsafePath},
		{"slash in a name", func(f *forged) plumbing.Hash {
			return f.tree(file(f, "a/../../../etc/passwd", "x"))
		}, ErrCorrupt},
		{".git directory", func(f *forged) plumbing.Hash {
			return f.tree(dir(f, ".GIT", file(f, "config", "[core]\nhooksPath=/tmp")))
		}, ErrUnsafePath},
		{"symlink out of the workspace", func(f *forged) plumbing.Hash {
			return f.tree(treeEntry{name: "etc", mode: filemode.Symlink, hash: f.blob("../../../../etc")})
		}, ErrLink},
		{"absolute symlink", func(f *forged) plumbing.Hash {
			return f.tree(treeEntry{name: "etc", mode: filemode.Symlink, hash: f.blob("/etc")})
		}, ErrLink},
		{"symlink climbing after a name", func(f *forged) plumbing.Hash {
			return f.tree(
				treeEntry{name: "a", mode: filemode.Symlink, hash: f.blob("b")},
				treeEntry{name: "c", mode: filemode.Symlink, hash: f.blob("a/../..")},
			)
		}, ErrLink},
		{"submodule", func(f *forged) plumbing.Hash {
			return f.tree(treeEntry{name: "sub", mode: filemode.Submodule, hash: plumbing.ComputeHash(plumbing.CommitObject, []byte("x"))})
		}, ErrSpecial},
		{"credential file", func(f *forged) plumbing.Hash {
			return f.tree(dir(f, ".claude", file(f, ".credentials.json", `{"token":"x"}`)))
		}, ErrDenied},
		{"deep path", func(f *forged) plumbing.Hash {
			e := file(f, "f", "deep")
			for range 80 {
				e = dir(f, "a", e)
			}
			return f.tree(e)
		}, ErrUnsafePath},
		{"long path", func(f *forged) plumbing.Hash {
			// 20 names of 250 bytes: 5,020 bytes, within the depth limit.
			e := file(f, strings.Repeat("f", 250), "x")
			for range 19 {
				e = dir(f, strings.Repeat("d", 250), e)
			}
			return f.tree(e)
		}, ErrUnsafePath},
		{"tree bomb", func(f *forged) plumbing.Hash {
			// 20 directories of 20 directories of the same 400 files:
			// 160,000 files from a few kilobytes.
			var files []treeEntry
			for i := range 400 {
				files = append(files, file(f, fmt.Sprintf("f%03d", i), ""))
			}
			leaf := dir(f, "x", files...)
			var mid []treeEntry
			for i := range 20 {
				mid = append(mid, treeEntry{name: "m" + itoa(i+10), mode: filemode.Dir, hash: leaf.hash})
			}
			midTree := dir(f, "x", mid...)
			var top []treeEntry
			for i := range 20 {
				top = append(top, treeEntry{name: "t" + itoa(i+10), mode: filemode.Dir, hash: midTree.hash})
			}
			return f.tree(top...)
		}, ErrTooLarge},
		// Both fit the path limit but not a file system: before the
		// check, the restore removed keep.txt and dir/f, then failed
		// with ENAMETOOLONG.
		{"name over 255 bytes", func(f *forged) plumbing.Hash {
			return f.tree(file(f, strings.Repeat("n", 256), "x"))
		}, ErrUnsafePath},
		{"link target over 4,095 bytes", func(f *forged) plumbing.Hash {
			return f.tree(
				file(f, "a", "x"),
				treeEntry{name: "l", mode: filemode.Symlink, hash: f.blob(strings.Repeat("./", 2048) + "a")},
			)
		}, ErrLink},
		{"blob missing from the packs", func(f *forged) plumbing.Hash {
			return f.tree(treeEntry{name: "ghost", mode: filemode.Regular, hash: plumbing.ComputeHash(plumbing.BlobObject, []byte("not packed"))})
		}, ErrMissing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			w := victim(t, e)
			f := &forged{t: t}
			commit := f.commit(tc.build(f))
			st := publish(t, e.blobs, "run-1", f.pack(), commit)
			_, err := w.Restore(context.Background(), st)
			require.ErrorIs(t, err, tc.want)
			assert.Equal(t, map[string]string{"keep.txt": "precious", "dir/f": "also"}, tree(t, w.Dir()), "a refused snapshot leaves the directory as it was")
		})
	}
}

func TestRestoreRefusesHostilePacks(t *testing.T) {
	good := func(t *testing.T) (*forged, plumbing.Hash) {
		f := &forged{t: t}
		return f, f.commit(f.tree(treeEntry{name: "a", mode: filemode.Regular, hash: f.blob("hello")}))
	}
	cases := []struct {
		name   string
		mangle func(t *testing.T, pack []byte) []byte
		want   error
	}{
		{"truncated", func(t *testing.T, p []byte) []byte { return p[:len(p)-30] }, ErrCorrupt},
		{"bad trailer", func(t *testing.T, p []byte) []byte { p[len(p)-1] ^= 1; return p }, ErrCorrupt},
		{"trailing bytes", func(t *testing.T, p []byte) []byte { return append(p, 0) }, ErrCorrupt},
		{"object count bomb", func(t *testing.T, p []byte) []byte {
			binary.BigEndian.PutUint32(p[8:], 0xffffffff)
			return p
		}, ErrTooLarge},
		{"size bomb", func(t *testing.T, p []byte) []byte {
			// One blob that claims 1 TiB.
			var buf bytes.Buffer
			buf.WriteString("PACK\x00\x00\x00\x02\x00\x00\x00\x01")
			buf.Write(entryHeader(plumbing.BlobObject, 1<<40))
			buf.WriteString("zlib stream never read")
			return buf.Bytes()
		}, ErrTooLarge},
		{"zlib stream longer than its declared size", func(t *testing.T, p []byte) []byte {
			var buf bytes.Buffer
			pw, err := newPackWriter(&buf, 1)
			require.NoError(t, err)
			require.NoError(t, pw.add(plumbing.ZeroHash, plumbing.BlobObject, []byte(strings.Repeat("x", 1<<20))))
			err = pw.finish()
			require.NoError(t, err)
			b := buf.Bytes()
			// Rewrite the entry header to claim 16 bytes (same header
			// length is not needed: the trailer is recomputed below).
			hdr := entryHeader(plumbing.BlobObject, 1<<20)
			out := append([]byte{}, b[:packHeader]...)
			out = append(out, entryHeader(plumbing.BlobObject, 16)...)
			out = append(out, b[packHeader+len(hdr):len(b)-packTrailer]...)
			sum := sha1sum(out)
			return append(out, sum...)
		}, ErrCorrupt},
		{"delta object", func(t *testing.T, p []byte) []byte {
			out := []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01")
			out = append(out, entryHeader(plumbing.REFDeltaObject, 10)...)
			out = append(out, make([]byte, 20)...)
			return append(out, sha1sum(out)...)
		}, ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			w := victim(t, e)
			f, commit := good(t)
			st := publish(t, e.blobs, "run-1", tc.mangle(t, f.pack()), commit)
			_, err := w.Restore(context.Background(), st)
			require.ErrorIs(t, err, tc.want)
			assert.Equal(t, map[string]string{"keep.txt": "precious", "dir/f": "also"}, tree(t, w.Dir()))
		})
	}
}

// A pack swapped for another one in the store (same key, other bytes) is
// refused before it is read.
func TestRestoreRefusesASwappedPack(t *testing.T) {
	e := newEnv(t)
	_, s1 := firstState(t, e, map[string]string{"f": "1"}, "v1")
	f := &forged{t: t}
	other := f.pack()
	require.NoError(t, blob.PutBytes(context.Background(), e.blobs, s1.Packs[0].Key, other))
	b := victim(t, e)
	_, err := b.Restore(context.Background(), s1)
	require.ErrorIs(t, err, ErrDigestMismatch)
	// A key of another run is refused too: a checkpoint cannot make a
	// worker read another run's blobs.
	s2 := *s1
	s2.Packs = []runstore.WorkspacePack{{Key: strings.Replace(s1.Packs[0].Key, "run-1", "run-2", 1), Size: s1.Packs[0].Size}}
	_, err = b.Restore(context.Background(), &s2)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Equal(t, map[string]string{"keep.txt": "precious", "dir/f": "also"}, tree(t, b.Dir()))
}

func itoa(i int) string { return strconv.Itoa(i) }

func sha1sum(b []byte) []byte {
	s := sha1.Sum(b)
	return s[:]
}

// The restore's own limits are inclusive: a tree exactly at MaxDepth, or
// with exactly MaxFiles directories, restores; one more is refused. Empty
// directories count too: a snapshot of nothing but nested empty trees is
// as costly to walk as one of files.
func TestRestoreLimitsAreInclusive(t *testing.T) {
	e := newEnv(t)
	restore := func(t *testing.T, lim Limits, build func(f *forged) plumbing.Hash) error {
		dir := t.TempDir()
		m := NewManager(filepath.Join(dir, "state"), e.blobs, lim, nil)
		w, err := m.Open(context.Background(), "run-1", filepath.Join(dir, "work"))
		require.NoError(t, err)
		defer w.Close()
		f := &forged{t: t}
		commit := f.commit(build(f))
		_, err = w.Restore(context.Background(), publish(t, e.blobs, "run-1", f.pack(), commit))
		return err
	}
	nest := func(f *forged, depth int) plumbing.Hash {
		e := treeEntry{name: "f", mode: filemode.Regular, hash: f.blob("x")}
		for range depth {
			e = treeEntry{name: "d", mode: filemode.Dir, hash: f.tree(e)}
		}
		return f.tree(e)
	}
	t.Run("depth", func(t *testing.T) {
		lim := Limits{MaxDepth: 2}
		require.NoError(t, restore(t, lim, func(f *forged) plumbing.Hash { return nest(f, 2) }), "d/d/f is 2 deep")
		require.ErrorIs(t, restore(t, lim, func(f *forged) plumbing.Hash { return nest(f, 3) }), ErrUnsafePath)
		// An empty directory one deeper: no file's path is over the
		// limit, the walk into it is.
		require.ErrorIs(t, restore(t, lim, func(f *forged) plumbing.Hash {
			e := treeEntry{name: "d", mode: filemode.Dir, hash: f.tree()}
			for range 2 {
				e = treeEntry{name: "d", mode: filemode.Dir, hash: f.tree(e)}
			}
			return f.tree(e)
		}), ErrUnsafePath)
	})
	files := func(sizes ...int) func(f *forged) plumbing.Hash {
		return func(f *forged) plumbing.Hash {
			var entries []treeEntry
			for i, n := range sizes {
				entries = append(entries, treeEntry{name: "f" + itoa(i), mode: filemode.Regular, hash: f.blob(strings.Repeat(itoa(i), n))})
			}
			return f.tree(entries...)
		}
	}
	for _, c := range []struct {
		name      string
		lim       Limits
		fits, not []int
		says      string
	}{
		{"file count", Limits{MaxFiles: 2}, []int{1, 1}, []int{1, 1, 1}, "more than 2 files"},
		{"file size", Limits{MaxFileBytes: 3}, []int{3}, []int{4}, "over the 3-byte single-file limit"},
		{"total size", Limits{MaxTotalBytes: 5}, []int{2, 3}, []int{3, 3}, "more than 5 bytes of files"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, restore(t, c.lim, files(c.fits...)))
			err := restore(t, c.lim, files(c.not...))
			require.ErrorIs(t, err, ErrTooLarge)
			assert.Contains(t, err.Error(), c.says)
		})
	}
	t.Run("empty directories", func(t *testing.T) {
		lim := Limits{MaxFiles: 3}
		empty := func(n int) func(f *forged) plumbing.Hash {
			return func(f *forged) plumbing.Hash {
				leaf := f.tree()
				var entries []treeEntry
				for i := range n {
					entries = append(entries, treeEntry{name: "e" + itoa(i), mode: filemode.Dir, hash: leaf})
				}
				return f.tree(entries...)
			}
		}
		require.NoError(t, restore(t, lim, empty(2)), "the root and 2 directories")
		err := restore(t, lim, empty(3))
		require.ErrorIs(t, err, ErrTooLarge)
		assert.Contains(t, err.Error(), "more than 3 directories")
	})
}

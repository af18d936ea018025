package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
)

// FuzzRestore feeds arbitrary bytes to a restore as the run's only pack.
// Whatever they are, the restore either succeeds or fails with one of the
// package's typed errors, never panics, and never writes outside the
// workspace (os.Root would refuse, and the test's directory holds nothing
// else to hit).
func FuzzRestore(f *testing.F) {
	seed := &forged{t: &testing.T{}}
	tree := seed.tree(treeEntry{name: "a", mode: filemode.Regular, hash: seed.blob("hello")})
	commit := seed.commit(tree)
	f.Add(seed.pack(), commit.String())
	deep := &forged{t: &testing.T{}}
	e := treeEntry{name: "f", mode: filemode.Regular, hash: deep.blob("x")}
	for range 200 {
		e = treeEntry{name: "a", mode: filemode.Dir, hash: deep.tree(e)}
	}
	f.Add(deep.pack(), deep.commit(deep.tree(e)).String())
	for _, e := range []treeEntry{
		{name: strings.Repeat("n", 256), mode: filemode.Regular},
		{name: "l", mode: filemode.Symlink},
	} {
		long := &forged{t: &testing.T{}}
		if e.mode == filemode.Symlink {
			e.hash = long.blob(strings.Repeat("./", 2048) + "a")
		} else {
			e.hash = long.blob("x")
		}
		f.Add(long.pack(), long.commit(long.tree(e)).String())
	}
	f.Fuzz(func(t *testing.T, pack []byte, commit string) {
		if !plumbing.IsHash(commit) || len(commit) != 40 {
			return
		}
		blobs := blob.NewMem()
		sum := sha256.Sum256(pack)
		key := runstore.WorkspacePackKey("run-1", hex.EncodeToString(sum[:]))
		if err := blob.PutBytes(context.Background(), blobs, key, pack); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		m := NewManager(dir+"/state", blobs, Limits{MaxFiles: 100, MaxTotalBytes: 1 << 20, MaxFileBytes: 1 << 16, MaxDepth: 16}, nil)
		w, err := m.Open(context.Background(), "run-1", dir+"/work")
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		st := &runstore.WorkspaceState{Commit: commit, Packs: []runstore.WorkspacePack{{Key: key, Size: int64(len(pack))}}}
		_, err = w.Restore(context.Background(), st)
		if err == nil {
			return
		}
		for _, typed := range []error{ErrTooLarge, ErrUnsafePath, ErrLink, ErrSpecial, ErrDenied, ErrCorrupt, ErrMissing, ErrSecret} {
			if errors.Is(err, typed) {
				return
			}
		}
		t.Fatalf("untyped error: %v", err)
	})
}

package blob_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/blob/storetest"
)

func openFS(t testing.TB, dir string) blob.Store {
	t.Helper()
	s, err := blob.OpenFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fsFaults are genuine filesystem faults: a directory with mode 000
// (EACCES), a file where a directory should be (ENOTDIR), a symlink loop
// where a directory should be (ELOOP) and the store's root directory
// vanishing (removed, or its volume unmounted), which would otherwise make
// every lookup look like an ENOENT. Root's CAP_DAC_OVERRIDE reads through
// mode 000, so under root that case skips here and
// TestFSMode000DirIsNotAbsence produces the real EACCES in a child process
// running as uid 65534 instead.
func fsFaults() []storetest.Fault {
	return []storetest.Fault{
		{Name: "Mode000Dir", Inject: func(t *testing.T) (blob.Store, string) {
			if os.Geteuid() == 0 {
				t.Skip("running as root: CAP_DAC_OVERRIDE bypasses mode 000 in this process; TestFSMode000DirIsNotAbsence checks it as uid 65534")
			}
			dir := t.TempDir()
			s := openFS(t, dir)
			if err := blob.PutBytes(context.Background(), s, "locked/blob", []byte("x")); err != nil {
				t.Fatal(err)
			}
			locked := filepath.Join(dir, "locked")
			if err := os.Chmod(locked, 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(locked, 0o700) })
			return s, "locked/blob"
		}},
		{Name: "FileWhereDirShouldBe", Inject: func(t *testing.T) (blob.Store, string) {
			dir := t.TempDir()
			s := openFS(t, dir)
			if err := os.WriteFile(filepath.Join(dir, "notadir"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			return s, "notadir/blob" // ENOTDIR
		}},
		{Name: "SymlinkLoop", Inject: func(t *testing.T) (blob.Store, string) {
			dir := t.TempDir()
			s := openFS(t, dir)
			if err := os.Symlink("loop", filepath.Join(dir, "loop")); err != nil {
				t.Fatal(err)
			}
			return s, "loop/blob" // ELOOP
		}},
		{Name: "RootGone", Inject: func(t *testing.T) (blob.Store, string) {
			dir := filepath.Join(t.TempDir(), "store")
			s := openFS(t, dir)
			if err := blob.PutBytes(context.Background(), s, "gone/blob", []byte("x")); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			return s, "gone/blob" // ENOENT, but from a store that no longer exists
		}},
	}
}

func TestFSConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		return storetest.Harness{
			New:    func(t *testing.T) blob.Store { return openFS(t, t.TempDir()) },
			Faults: fsFaults(),
		}
	})
}

// TestFSLayout pins the on-disk mechanics: modes, no temporary files left,
// keys as paths.
func TestFSLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := openFS(t, dir)
	defer s.Close()
	ctx := context.Background()
	if err := blob.PutBytes(ctx, s, "runs/r1/checkpoints/1.json", []byte("{}"), blob.CreateOnly()); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{
		dir:                        0o700 | os.ModeDir,
		filepath.Join(dir, "runs"): 0o700 | os.ModeDir,
		filepath.Join(dir, "runs/r1/checkpoints"):        0o700 | os.ModeDir,
		filepath.Join(dir, "runs/r1/checkpoints/1.json"): 0o600,
	} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
	// A failed put leaves no temporary file behind.
	_ = s.Put(ctx, "runs/r1/checkpoints/2.json", strings.NewReader("short"), 10)
	_ = blob.PutBytes(ctx, s, "runs/r1/checkpoints/1.json", []byte("other"), blob.CreateOnly())
	entries, err := os.ReadDir(filepath.Join(dir, "runs/r1/checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "1.json" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("directory holds %q, want only 1.json", names)
	}
	// Deleting the last blob prunes the empty directories, so that a
	// directory's name can become a key later.
	if err := s.Delete(ctx, "runs/r1/checkpoints/1.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); !os.IsNotExist(err) {
		t.Fatalf("runs/ still exists after its last blob was deleted: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the store root itself must stay: %v", err)
	}
}

// A symlink inside the root cannot take a key outside it.
func TestFSNoEscape(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "store")
	s := openFS(t, dir)
	defer s.Close()
	if err := os.Symlink(outside, filepath.Join(dir, "esc")); err != nil {
		t.Fatal(err)
	}
	err := blob.PutBytes(context.Background(), s, "esc/blob", []byte("x"))
	if err == nil {
		t.Fatal("Put through a symlink to outside the root succeeded")
	}
	if _, serr := os.Stat(filepath.Join(outside, "blob")); !os.IsNotExist(serr) {
		t.Fatalf("a blob was written outside the root: %v", serr)
	}
}

// An empty directory left at a key by a crash between a Delete and its
// pruning does not block a later Put of that key.
func TestFSEmptyDirDebris(t *testing.T) {
	dir := t.TempDir()
	s := openFS(t, dir)
	defer s.Close()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]blob.PutOption{nil, {blob.CreateOnly()}} {
		if err := blob.PutBytes(context.Background(), s, "a/b", []byte("x"), opts...); err != nil {
			t.Fatalf("Put over an empty directory: %v", err)
		}
		if err := s.Delete(context.Background(), "a/b"); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
}

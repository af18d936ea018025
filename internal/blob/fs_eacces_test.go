package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/testenv"
)

// eaccesRootEnv marks the unprivileged child started by
// TestFSMode000DirIsNotAbsence and carries the store root it checks.
const eaccesRootEnv = "TETHER_BLOB_EACCES_ROOT"

// nobody is the conventional unprivileged uid and gid.
const nobody = testenv.Nobody

// eaccesChild is the helper test the child runs.
const eaccesChild = "TestFSMode000DirAsNobody"

// TestFSMode000DirIsNotAbsence puts a directory with mode 000 on the path
// of a key and checks that every operation on that key reports the real
// EACCES as a fault, never as absence. Root's CAP_DAC_OVERRIDE reads
// straight through mode 000, so when the tests run as root the check runs
// in a copy of this test binary dropped to uid and gid 65534, where the
// kernel really refuses; any other user runs it directly.
func TestFSMode000DirIsNotAbsence(t *testing.T) {
	base := testenv.NobodyTempDir(t)
	root := filepath.Join(base, "store")
	s := openFS(t, root)
	ctx := context.Background()
	for _, k := range []string{"locked/blob", "open/blob"} {
		if err := blob.PutBytes(ctx, s, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	asRoot := os.Geteuid() == 0
	if asRoot {
		// The store belongs to the unprivileged user, as a service's store
		// belongs to its service user: only the mode-000 directory refuses.
		if err := chownTree(root, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	locked := filepath.Join(root, "locked")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o700) })
	if !asRoot {
		checkMode000(t, root)
		return
	}
	runAsNobody(t, root)
}

// TestFSMode000DirAsNobody is the half of TestFSMode000DirIsNotAbsence that
// runs in the child process as uid 65534; on its own it skips.
func TestFSMode000DirAsNobody(t *testing.T) {
	root := os.Getenv(eaccesRootEnv)
	if root == "" {
		t.Skip("helper of TestFSMode000DirIsNotAbsence: runs only in the child it starts as uid 65534")
	}
	if uid, gid := os.Geteuid(), os.Getegid(); uid != nobody || gid != nobody {
		t.Fatalf("child runs as uid %d gid %d, want %d/%d", uid, gid, nobody, nobody)
	}
	checkMode000(t, root)
}

// runAsNobody runs the helper test as uid and gid 65534 and fails t if
// the child fails or does not run it. A child that cannot be started, for
// example because changing uid is not permitted here, makes the test skip,
// or fail when CI=true.
func runAsNobody(t *testing.T, root string) {
	t.Helper()
	out, err := testenv.RunAsNobody(t, eaccesChild, eaccesRootEnv+"="+root)
	if err != nil {
		testenv.Unavailable(t, "cannot run the test binary as uid %d (%v), so a real EACCES cannot be produced under root", nobody, err)
		return
	}
	if !bytes.Contains(out, []byte("--- PASS: "+eaccesChild)) {
		t.Fatalf("child as uid %d did not run %s:\n%s", nobody, eaccesChild, out)
	}
}

// checkMode000 checks, with the store in the clear and encrypted, that
// every operation on a key under root/locked (mode 000) fails with EACCES
// and not blob.ErrNotFound, while a key elsewhere in the store still reads.
func checkMode000(t *testing.T, root string) {
	t.Helper()
	ctx := context.Background()
	key := bytes.Repeat([]byte{0x42}, 32)
	// The control key proves this user reaches the store, so the EACCES
	// below comes from the mode-000 directory alone.
	s := openFS(t, root)
	_, err := s.Stat(ctx, "open/blob")
	s.Close()
	if err != nil {
		t.Fatalf("Stat of a key outside the mode-000 directory: %v (the store must be reachable by this user; is $TMPDIR world-searchable?)", err)
	}
	for _, name := range []string{"plain", "encrypted"} {
		t.Run(name, func(t *testing.T) {
			s := openFS(t, root)
			if name == "encrypted" {
				es, err := blob.Encrypted(s, key)
				if err != nil {
					t.Fatal(err)
				}
				s = es
			}
			defer s.Close()
			fault := func(op string, err error) {
				t.Helper()
				switch {
				case err == nil:
					t.Errorf("%s succeeded through a mode-000 directory", op)
				case errors.Is(err, blob.ErrNotFound):
					t.Errorf("%s reported EACCES as absence: %v", op, err)
				case !errors.Is(err, syscall.EACCES):
					t.Errorf("%s: %v, want an error wrapping EACCES", op, err)
				default:
					t.Logf("%s: %v", op, err)
				}
			}
			rc, err := s.Get(ctx, "locked/blob")
			if err == nil {
				rc.Close()
			}
			fault("Get", err)
			_, err = s.Stat(ctx, "locked/blob")
			fault("Stat", err)
			_, err = s.List(ctx, "locked/")
			fault("List of the directory", err)
			_, err = s.List(ctx, "")
			fault("List of the whole store", err)
			fault("Put", blob.PutBytes(ctx, s, "locked/blob", []byte("data")))
			fault("Put of a new key", blob.PutBytes(ctx, s, "locked/new", []byte("data")))
			fault("Delete", s.Delete(ctx, "locked/blob"))
		})
	}
}

func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

package packer

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultyDisk swaps the package's disk calls for the test's and puts the
// real ones back when it ends. Tests that use it must not run in parallel.
func faultyDisk(t *testing.T) *struct {
	sync      func(*os.File) error
	close     func(*os.File) error
	mkdirAll  func(root *os.Root, name string, perm fs.FileMode) error
	removeAll func(path string) error
	removeIn  func(root *os.Root, name string) error
} {
	saved := disk
	t.Cleanup(func() { disk = saved })
	return &disk
}

// eio is what a failing disk returns, as the os package wraps it.
func eio(op string, f *os.File) error {
	return &fs.PathError{Op: op, Path: f.Name(), Err: syscall.EIO}
}

// isStagedFile tells a file written into the staging directory from the
// folders that are synced around it.
func isStagedFile(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular() && strings.Contains(f.Name(), stagingPrefix)
}

// isLiveDir is a folder of the state root outside the staging directory:
// the ones the commit syncs after its renames.
func isLiveDir(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.IsDir() && !strings.Contains(f.Name(), stagingPrefix)
}

// nestedArchive holds two folders with two files each, below a folder.
func nestedArchive(t *testing.T) []byte {
	return craft(t, testBackend, testID,
		file("project/"+testID+".jsonl", "{}\n"),
		file("tasks/"+testID+"/a/1", "1"), file("tasks/"+testID+"/a/2", "2"),
		file("tasks/"+testID+"/b/1", "1"), file("tasks/"+testID+"/b/2", "2"))
}

// Each staging folder is made once: a second file in a folder, or a file
// in a folder below one already made, does not make its folders again.
func TestStagedFoldersAreMadeOnce(t *testing.T) {
	d := faultyDisk(t)
	var made []string
	real := d.mkdirAll
	d.mkdirAll = func(root *os.Root, name string, perm fs.FileMode) error {
		made = append(made, name)
		return real(root, name, perm)
	}
	p := newTestPacker(testEnv(t, "x"), Limits{})
	require.NoError(t, p.UnpackSession(ctx, testID, nestedArchive(t)))
	assert.True(t, p.HasSession(ctx, testID))
	seen := map[string]bool{}
	for _, name := range made {
		for d := name; d != "."; d = path.Dir(d) {
			assert.False(t, seen[d], "folder %s made again (made: %v)", d, made)
		}
		seen[name] = true
	}
	assert.Len(t, made, 3, "project, tasks/<id>/a and tasks/<id>/b: %v", made)
}

// failDisk makes op ("sync" or "close") fail with EIO on every file match
// selects (a failing close still closes it), and returns the names of the
// files it failed.
func failDisk(t *testing.T, op string, match func(*os.File) bool) *[]string {
	d := faultyDisk(t)
	var hit []string
	realSync, realClose := d.sync, d.close
	switch op {
	case "sync":
		d.sync = func(f *os.File) error {
			if match(f) {
				hit = append(hit, f.Name())
				return eio("sync", f)
			}
			return realSync(f)
		}
	case "close":
		d.close = func(f *os.File) error {
			if match(f) {
				hit = append(hit, f.Name())
				realClose(f)
				return eio("close", f)
			}
			return realClose(f)
		}
	default:
		t.Fatalf("failDisk: no disk call %q", op)
	}
	return &hit
}

// unpackOnFailingDisk unpacks nestedArchive with the disk call op
// failing on the files match picks; it returns the packer, the files the
// failure hit, and the unpack's error.
func unpackOnFailingDisk(t *testing.T, op string, match func(*os.File) bool) (*Packer, *[]string, error) {
	t.Helper()
	hit := failDisk(t, op, match)
	p := newTestPacker(testEnv(t, "x"), Limits{})
	return p, hit, p.UnpackSession(ctx, testID, nestedArchive(t))
}

// A staged file whose fsync fails, or whose close fails after a good write
// (a delayed write error), fails the unpack with the disk's error (not as
// a corrupt archive), and the session is not there.
func TestStagedFileDiskFailureFailsTheUnpack(t *testing.T) {
	for _, op := range []string{"sync", "close"} {
		t.Run(op, func(t *testing.T) {
			p, hit, err := unpackOnFailingDisk(t, op, isStagedFile)
			require.ErrorIs(t, err, syscall.EIO)
			assert.NotErrorIs(t, err, ErrCorrupt)
			assert.NotEmpty(t, *hit, "no staged file was %sed", op)
			assert.False(t, p.HasSession(ctx, testID))
		})
	}
}

// The commit syncs every live folder it renamed into; a failing sync (or a
// close after it) fails the unpack before the main file appears, so the
// session is not there.
func TestLiveFolderSyncFailureFailsTheUnpack(t *testing.T) {
	for _, op := range []string{"sync", "close"} {
		t.Run(op, func(t *testing.T) {
			p, hit, err := unpackOnFailingDisk(t, op, isLiveDir)
			require.ErrorIs(t, err, syscall.EIO)
			assert.NotEmpty(t, *hit, "no live folder was synced")
			assert.False(t, p.HasSession(ctx, testID))
		})
	}
}

// A staging directory that cannot be removed is reported: joined to the
// unpack's own error when it failed, logged when it succeeded.
func TestStagingRemovalFailureIsReported(t *testing.T) {
	d := faultyDisk(t)
	gone := errors.New("injected: cannot remove")
	var left []string
	d.removeAll = func(p string) error {
		left = append(left, p)
		return gone
	}
	logger, buf := capture()
	saved := slog.Default()
	slog.SetDefault(logger)
	t.Cleanup(func() { slog.SetDefault(saved) })

	p := newTestPacker(testEnv(t, "x"), Limits{})
	broken := craft(t, testBackend, testID, file("project/"+testID+".jsonl", "{}\n"), file("../escape", "x"))
	err := p.UnpackSession(ctx, testID, broken)
	require.Error(t, err)
	assert.ErrorIs(t, err, gone)
	assert.NotContains(t, buf.String(), "staging directory left behind")

	require.NoError(t, p.UnpackSession(ctx, testID, nestedArchive(t)))
	require.Len(t, left, 2)
	assert.Contains(t, buf.String(), "staging directory left behind")
	assert.Contains(t, buf.String(), left[1])
}

// A stale staging directory that cannot be removed is logged by name; one
// already gone (another unpack swept it first) is not.
func TestSweepLogsWhatItCannotRemove(t *testing.T) {
	for _, tc := range []struct {
		err    error
		logged bool
	}{{syscall.EIO, true}, {fs.ErrNotExist, false}} {
		d := faultyDisk(t)
		d.removeIn = func(*os.Root, string) error { return &fs.PathError{Op: "unlinkat", Path: "x", Err: tc.err} }
		dir := t.TempDir()
		stale := filepath.Join(dir, stagingPrefix+"old")
		require.NoError(t, os.Mkdir(stale, 0o755))
		old := time.Now().Add(-2 * staleStaging)
		require.NoError(t, os.Chtimes(stale, old, old))
		logger, buf := capture()
		saved := slog.Default()
		slog.SetDefault(logger)
		root, err := os.OpenRoot(dir)
		require.NoError(t, err)
		sweepStaging(root)
		root.Close()
		slog.SetDefault(saved)
		assert.Equal(t, tc.logged, strings.Contains(buf.String(), "cannot remove a stale staging directory"), "%v: %s", tc.err, buf.String())
		if tc.logged {
			assert.Contains(t, buf.String(), stagingPrefix+"old")
		}
	}
}

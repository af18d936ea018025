package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
)

func openFiles(t *testing.T) int {
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(des)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// One worker serves 1,000 short runs (restore, write, snapshot, restore
// again, as visits do): its open files and its heap stay flat, because
// pack files close with the last visit of a run and finished runs are
// evicted.
func TestManyRunsThroughOneWorkerStayFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 runs")
	}
	ctx := context.Background()
	dir := t.TempDir()
	blobs, err := blob.OpenFS(filepath.Join(dir, "blobs"))
	require.NoError(t, err)
	defer blobs.Close()
	m := NewManager(filepath.Join(dir, "state"), blobs, Limits{}, nil)
	visit := func(i int) {
		run := fmt.Sprintf("run-%04d", i)
		w, err := m.Open(ctx, run, filepath.Join(dir, "work", run))
		require.NoError(t, err)
		defer w.Close()
		_, err = w.Restore(ctx, nil)
		require.NoError(t, err)
		write(t, w.Dir(), map[string]string{"main.go": fmt.Sprintf("package main // %d\n", i), "go.mod": "module x\n"})
		st, _, err := w.Snapshot(ctx, nil, info("writer visit 1"))
		require.NoError(t, err)
		w.Touched()
		_, err = w.Restore(ctx, st) // reads the commit from its pack
		require.NoError(t, err)
	}
	var fds, heap []int
	for i := range 1000 {
		visit(i)
		if i == 99 || i == 999 {
			fds = append(fds, openFiles(t))
			heap = append(heap, int(heapInUse()))
		}
	}
	t.Logf("open files after 100 and 1,000 runs: %v; heap in use: %v", fds, heap)
	assert.LessOrEqual(t, fds[1]-fds[0], 4, "open files grow with finished runs")
	assert.Less(t, heap[1]-heap[0], 1<<20, "the heap grows with finished runs")
	// The disk too: finished runs' working directories and cached packs
	// beyond the caches' bounds are gone.
	work, err := os.ReadDir(filepath.Join(dir, "work"))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(work), maxIdleDirs, "working directories of finished runs pile up")
	state, err := os.ReadDir(filepath.Join(dir, "state"))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(state), maxIdleStores, "cached packs of finished runs pile up")
}

// A run evicted from a worker's caches, on disk too, comes back whole on
// its next visit there: its files are restored from its packs.
func TestEvictedRunRestoresOnItsNextVisit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	blobs, err := blob.OpenFS(filepath.Join(dir, "blobs"))
	require.NoError(t, err)
	defer blobs.Close()
	var evicted []string
	m := NewManager(filepath.Join(dir, "state"), blobs, Limits{}, nil, WithEvicted(func(run string) { evicted = append(evicted, run) }))
	snapshot := func(run string, files map[string]string) *runstore.WorkspaceState {
		w, err := m.Open(ctx, run, filepath.Join(dir, "work", run))
		require.NoError(t, err)
		defer w.Close()
		_, err = w.Restore(ctx, nil)
		require.NoError(t, err)
		write(t, w.Dir(), files)
		st, _, err := w.Snapshot(ctx, nil, info("writer visit 1"))
		require.NoError(t, err)
		return st
	}
	first := snapshot("run-first", map[string]string{"keep.txt": "mine\n"})
	for i := range maxIdleDirs + maxIdleStores {
		snapshot(fmt.Sprintf("run-%03d", i), map[string]string{"x": "y"})
	}
	require.NoDirExists(t, filepath.Join(dir, "work", "run-first"), "the first run was evicted from disk")
	require.NoDirExists(t, filepath.Join(dir, "state", "run-first"))
	require.Contains(t, evicted, "run-first", "the worker is told, so that the run's live sessions go too")

	w, err := m.Open(ctx, "run-first", filepath.Join(dir, "work", "run-first"))
	require.NoError(t, err)
	defer w.Close()
	got, err := w.Restore(ctx, first)
	require.NoError(t, err)
	assert.False(t, got.Hit, "nothing of the run was left to reuse")
	b, err := os.ReadFile(filepath.Join(w.Dir(), "keep.txt"))
	require.NoError(t, err)
	assert.Equal(t, "mine\n", string(b))
}

// A pack of tens of thousands of tiny objects, far more than a workspace
// within its limits can reference, is refused before it is kept.
func TestRestoreRefusesAPackOfTooManyObjects(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	f := &forged{t: t}
	commit := f.commit(f.tree(treeEntry{name: "a", mode: filemode.Regular, hash: f.blob("hello")}))
	for i := range 60_000 {
		f.blob(fmt.Sprintf("%d", i))
	}
	st := publish(t, e.blobs, "run-1", f.pack(), commit)
	dir := t.TempDir()
	m := NewManager(filepath.Join(dir, "state"), e.blobs, Limits{MaxFiles: 10}, nil)
	w, err := m.Open(ctx, "run-1", filepath.Join(dir, "work"))
	require.NoError(t, err)
	defer w.Close()
	_, err = w.Restore(ctx, st)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "objects")
}

// zlibBomb is a pack of n blobs of size zero bytes each: a few hundred
// kilobytes a GiB.
func zlibBomb(t *testing.T, n int, size int64) []byte {
	var z bytes.Buffer
	zw, err := newZlib(&z)
	require.NoError(t, err)
	zero := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(zero)) {
		_, err := zw.Write(zero[:min(int64(len(zero)), left)])
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	raw := append(entryHeader(plumbing.BlobObject, size), z.Bytes()...)
	var buf bytes.Buffer
	pw, err := newPackWriter(&buf, n)
	require.NoError(t, err)
	for range n {
		require.NoError(t, pw.addRaw(entry{typ: plumbing.BlobObject, size: size}, raw))
	}
	require.NoError(t, pw.finish())
	return buf.Bytes()
}

// The report's case: 8 GiB of zeros in an 8 MB pack, refused within a
// deadline of 100 ms, both when downloaded and when the worker finds it
// in its cache at start.
func TestPackScanHonoursTheContext(t *testing.T) {
	bomb := zlibBomb(t, 32, DefaultMaxFileBytes)
	t.Logf("pack of %d bytes inflating to %d GiB", len(bomb), 32*DefaultMaxFileBytes>>30)
	sum := sha256.Sum256(bomb)
	digest := hex.EncodeToString(sum[:])

	t.Run("download", func(t *testing.T) {
		e := newEnv(t)
		w := victim(t, e)
		st := publish(t, e.blobs, "run-1", bomb, plumbing.ComputeHash(plumbing.CommitObject, []byte("x")))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := w.Restore(ctx, st)
		took := time.Since(start)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, took, time.Second)
		assert.Equal(t, map[string]string{"keep.txt": "precious", "dir/f": "also"}, tree(t, w.Dir()))
	})
	t.Run("cache at start", func(t *testing.T) {
		dir := t.TempDir()
		packs := filepath.Join(dir, "state", "run-1", "packs")
		require.NoError(t, os.MkdirAll(packs, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(packs, digest+packExt), bomb, 0o600))
		m := NewManager(filepath.Join(dir, "state"), blob.NewMem(), Limits{}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := m.Open(ctx, "run-1", filepath.Join(dir, "work"))
		took := time.Since(start)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, took, time.Second)
	})
}

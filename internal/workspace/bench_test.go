package workspace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
)

// benchRepo writes files files of about 10 KiB each (100 MB for 10,000)
// into dir, in directories of 100, with content that compresses like
// source code does (about 3x).
func benchRepo(b *testing.B, dir string, files int) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"func", "return", "if", "err", "nil", "for", "range", "package", "import", "type", "struct", "ctx", "string", "int"}
	for i := range files {
		var buf []byte
		for len(buf) < 10<<10 {
			buf = append(buf, words[rng.IntN(len(words))]...)
			buf = append(buf, ' ')
			if rng.IntN(8) == 0 {
				buf = append(buf, fmt.Sprintf("v%d\n", rng.Uint64())...)
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%05d.go", i))
		require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(b, os.WriteFile(p, buf, 0o644))
	}
}

// benchImported opens a workspace on a fresh file store, fills it with
// the 10,000-file, 100 MB benchRepo and snapshots that as the import.
// The workspace is closed when the benchmark ends.
func benchImported(b *testing.B) (*Workspace, *runstore.WorkspaceState, blob.Store) {
	dir := b.TempDir()
	blobs, err := blob.Open(context.Background(), "file://"+filepath.Join(dir, "store"))
	require.NoError(b, err)
	m := NewManager(filepath.Join(dir, "state"), blobs, Limits{}, nil)
	w, err := m.Open(context.Background(), "bench", filepath.Join(dir, "work"))
	require.NoError(b, err)
	b.Cleanup(func() { w.Close() })
	benchRepo(b, w.Dir(), 10_000)
	st, _, err := w.Snapshot(context.Background(), nil, info("import"))
	require.NoError(b, err)
	return w, st, blobs
}

// BenchmarkSnapshotOneFileChange: a 10,000-file, 100 MB workspace that was
// snapshotted, then one file edited; the snapshot that records the edit.
// Reports the bytes uploaded per snapshot.
func BenchmarkSnapshotOneFileChange(b *testing.B) {
	w, st, _ := benchImported(b)
	importMB := float64(st.Packs[0].Size) / (1 << 20)
	// Let the import's files age past the racy window, as they would
	// between two visits.
	time.Sleep(time.Duration(2 * racyWindow))
	var uploaded int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		p := filepath.Join(w.Dir(), "pkg042", "file04217.go")
		require.NoError(b, os.WriteFile(p, fmt.Appendf(nil, "package pkg042 // edit %d\n", i), 0o644))
		b.StartTimer()
		next, rep, err := w.Snapshot(context.Background(), st, info(fmt.Sprintf("writer visit %d", i+1)))
		require.NoError(b, err)
		if !rep.Changed {
			b.Fatal("the edit was not seen")
		}
		uploaded += rep.Uploaded
		st = next
	}
	b.ReportMetric(float64(uploaded)/float64(b.N), "uploaded-B/op")
	b.ReportMetric(float64(len(st.Packs)), "packs")
	b.ReportMetric(importMB, "import-pack-MB")
}

// BenchmarkSnapshotNoChange: the same workspace, nothing edited: the cost
// every visit pays to find out.
func BenchmarkSnapshotNoChange(b *testing.B) {
	w, st, _ := benchImported(b)
	time.Sleep(time.Duration(2 * racyWindow))
	_, _, err := w.Snapshot(context.Background(), st, info("refresh"))
	require.NoError(b, err)
	b.ResetTimer()
	for range b.N {
		_, rep, err := w.Snapshot(context.Background(), st, info("again"))
		require.NoError(b, err)
		if rep.Changed {
			b.Fatal("nothing changed")
		}
	}
}

// BenchmarkRestoreNewWorker: the 100 MB workspace restored on a worker
// that holds nothing of it (download, check, write every file).
func BenchmarkRestoreNewWorker(b *testing.B) {
	_, st, blobs := benchImported(b)
	dir := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		m := NewManager(filepath.Join(dir, fmt.Sprintf("state-%d", i)), blobs, Limits{}, nil)
		w, err := m.Open(context.Background(), "bench", filepath.Join(dir, fmt.Sprintf("work-%d", i)))
		require.NoError(b, err)
		if _, err := w.Restore(context.Background(), st); err != nil {
			b.Fatal(err)
		}
		w.Close()
	}
}

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

// fanBench is one warm worker holding a run's imported workspace: its
// trunk directory restored and snapshotted, its objects local.
type fanBench struct {
	m     *Manager
	dir   string
	trunk *runstore.WorkspaceState
}

func newFanBench(b *testing.B, files int) *fanBench {
	dir := b.TempDir()
	blobs, err := blob.Open(context.Background(), "file://"+filepath.Join(dir, "store"))
	require.NoError(b, err)
	m := NewManager(filepath.Join(dir, "state"), blobs, Limits{}, nil)
	w, err := m.Open(context.Background(), "bench", filepath.Join(dir, "work", "bench"))
	require.NoError(b, err)
	benchRepo(b, w.Dir(), files)
	st, _, err := w.Snapshot(context.Background(), nil, info("import"))
	require.NoError(b, err)
	w.Close()
	// Let the files age past the racy window, as between two visits.
	time.Sleep(time.Duration(2 * racyWindow))
	return &fanBench{m: m, dir: dir, trunk: st}
}

// visit is one visit's workspace work in dir: restore st, edit one file
// (as the agent would), snapshot.
func (f *fanBench) visit(b *testing.B, dir string, st *runstore.WorkspaceState, edit string) (*runstore.WorkspaceState, Restored) {
	ctx := context.Background()
	w, err := f.m.Open(ctx, "bench", filepath.Join(f.dir, "work", dir))
	require.NoError(b, err)
	defer w.Close()
	got, err := w.Restore(ctx, st)
	require.NoError(b, err)
	w.Touched()
	require.NoError(b, os.WriteFile(filepath.Join(w.Dir(), "pkg004", "file00421.go"), []byte("package pkg004 // "+edit+"\n"), 0o644))
	next, rep, err := w.Snapshot(ctx, st, CommitInfo{Message: edit, When: time.Unix(1_800_000_000, 0)})
	require.NoError(b, err)
	if !rep.Changed {
		b.Fatal("the edit was not seen")
	}
	return next, got
}

// BenchmarkFanOutWorkspace is the workspace work of a 3-branch fan-out
// beside a trunk visit, on one warm worker (the run's objects local, its
// trunk directory restored), per visit: restore, one file edited,
// snapshot. A branch's first visit on a worker writes the whole workspace
// into the branch's own directory; its later visits are as cheap as the
// trunk's. The join's work is reported per fan-out: measuring the three
// branches (pick, trunk), or merging them (merge).
func BenchmarkFanOutWorkspace(b *testing.B) {
	for _, files := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			f := newFanBench(b, files)
			// Warm the trunk directory (the import left it restored).
			trunk, _ := f.visit(b, "bench", f.trunk, "warm")
			b.Run("trunk-visit", func(b *testing.B) {
				st := trunk
				for i := range b.N {
					st, _ = f.visit(b, "bench", st, fmt.Sprintf("trunk %d", i))
				}
			})
			b.Run("branch-first-visit", func(b *testing.B) {
				for i := range b.N {
					name := fmt.Sprintf("bench@first-%d", i)
					f.visit(b, name, trunk, name)
					b.StopTimer()
					require.NoError(b, os.RemoveAll(filepath.Join(f.dir, "work", name)))
					b.StartTimer()
				}
			})
			b.Run("branch-next-visit", func(b *testing.B) {
				st, _ := f.visit(b, "bench@next", trunk, "first")
				b.ResetTimer()
				for i := range b.N {
					st, _ = f.visit(b, "bench@next", st, fmt.Sprintf("branch %d", i))
				}
			})
			// Three branches, each with its own one-file change.
			var branches []MergeBranch
			for i := range 3 {
				name := fmt.Sprintf("bench@b%d", i)
				ctx := context.Background()
				w, err := f.m.Open(ctx, "bench", filepath.Join(f.dir, "work", name))
				require.NoError(b, err)
				_, err = w.Restore(ctx, trunk)
				require.NoError(b, err)
				w.Touched()
				require.NoError(b, os.WriteFile(filepath.Join(w.Dir(), fmt.Sprintf("pkg%03d", i), "new.go"), []byte(fmt.Sprintf("package p // branch %d\n", i)), 0o644))
				st, _, err := w.Snapshot(ctx, trunk, info(name))
				require.NoError(b, err)
				w.Close()
				branches = append(branches, MergeBranch{Name: fmt.Sprintf("b%d", i), State: st})
			}
			b.Run("join-measure", func(b *testing.B) {
				for range b.N {
					ctx := context.Background()
					w, err := f.m.Open(ctx, "bench", filepath.Join(f.dir, "work", "bench@join"))
					require.NoError(b, err)
					require.NoError(b, w.Load(ctx, trunk))
					for _, br := range branches {
						require.NoError(b, w.Load(ctx, br.State))
						st, err := w.Stat(ctx, trunk.Commit, br.State.Commit)
						require.NoError(b, err)
						if st.Files != 1 {
							b.Fatalf("branch %s changed %d files", br.Name, st.Files)
						}
					}
					w.Close()
				}
			})
			b.Run("join-merge", func(b *testing.B) {
				for i := range b.N {
					ctx := context.Background()
					w, err := f.m.Open(ctx, "bench", filepath.Join(f.dir, "work", "bench@join"))
					require.NoError(b, err)
					_, m, err := w.Merge(ctx, trunk, branches, CommitInfo{Message: "join merge", When: time.Unix(1_800_000_000+int64(i), 0)})
					require.NoError(b, err)
					if !m.Changed || len(m.Conflicts) > 0 {
						b.Fatalf("merge: changed %t, %d conflicts", m.Changed, len(m.Conflicts))
					}
					w.Close()
				}
			})
		})
	}
}

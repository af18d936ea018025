package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
)

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

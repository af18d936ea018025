package activities

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/backend/scripted"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// BenchmarkVisitPersistWorkspace is one activity-level persist visit of the
// scripted agent that edits one file of a 1,000-file workspace, with the
// session and the workspace held by this worker (the common case): no
// Temporal, a file blob store.
func BenchmarkVisitPersistWorkspace(b *testing.B) {
	dir := b.TempDir()
	store, err := blob.Open(context.Background(), "file://"+dir+"/store")
	require.NoError(b, err)
	a := &Activities{Blobs: store, Runs: runstore.New(store), Backends: Backends{scripted.New(scripted.Options{})},
		StateDir: dir + "/state", WorkDir: dir + "/work", Queue: "q",
		Workspaces: workspace.NewManager(dir+"/state/workspaces", store, workspace.Limits{}, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	src := b.TempDir()
	for i := range 1000 {
		p := filepath.Join(src, fmt.Sprintf("d%02d", i/100), fmt.Sprintf("f%04d.txt", i))
		require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(b, os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644))
	}
	ws, _, err := workspace.Import(context.Background(), store, "r1", workspace.Source{From: src}, workspace.Limits{}, time.Now())
	require.NoError(b, err)
	node := graph.Node{ID: "w", Kind: graph.KindAgent, Backend: backend.Scripted, Session: graph.SessionPersist, Prompt: "go",
		Script: []string{"WRITE: notes.txt = visit {{.Visit}}\nok"}}
	var slot *SessionPlan
	b.ResetTimer()
	for i := range b.N {
		req := &VisitRequest{RunID: "r1", NodeID: "w", Visit: i + 1, Node: node, Backend: backend.Scripted, Workspace: ws,
			PackTo: runstore.SessionKey("r1", "w", fmt.Sprintf("01J%023d", i)), PauseTo: runstore.PauseKey("r1", "w", fmt.Sprintf("01K%023d", i)),
			Session: slot, Started: time.Now()}
		res, err := a.Visit(context.Background(), req)
		require.NoError(b, err)
		if res.Workspace != nil {
			ws = res.Workspace
		}
		slot = &SessionPlan{Kind: "unpack_own_slot", SessionID: res.SessionID, StateRef: res.PackedTo, Digest: res.PackDigest}
	}
}

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

	"github.com/tether-run/tether/internal/backend/scripted"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// benchVisits runs b.N visits of node, activity by activity (no Temporal,
// a file blob store), in a run whose workspace was imported from 1,000
// small files, and whose first visit (which restores those files onto
// this worker, once per run) is not timed. Each visit continues the
// previous one's session and workspace, as the workflow would plan it.
func benchVisits(b *testing.B, node graph.Node) {
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
	var slot *SessionPlan
	visit := func(i int) {
		req := &VisitRequest{RunID: "r1", NodeID: node.ID, Visit: i + 1, Node: node, Backend: node.Backend, Workspace: ws, Session: slot, Started: time.Now()}
		if node.Kind == graph.KindAgent {
			req.PackTo = runstore.SessionKey("r1", node.ID, fmt.Sprintf("01J%023d", i))
			req.PauseTo = runstore.PauseKey("r1", node.ID, fmt.Sprintf("01K%023d", i))
		}
		res, err := a.Visit(context.Background(), req)
		require.NoError(b, err)
		if res.Workspace != nil {
			ws = res.Workspace
		}
		if res.PackedTo != "" {
			slot = &SessionPlan{Kind: "unpack_own_slot", SessionID: res.SessionID, StateRef: res.PackedTo, Digest: res.PackDigest}
		}
	}
	visit(0)
	b.ResetTimer()
	for i := range b.N {
		visit(i + 1)
	}
}

// BenchmarkVisitPersistWorkspace: a persist visit of the scripted agent
// that edits one file, with the session and the workspace held by this
// worker (the common case): restore hits, execute, snapshot the change and
// pack the session side by side.
func BenchmarkVisitPersistWorkspace(b *testing.B) {
	benchVisits(b, graph.Node{ID: "w", Kind: graph.KindAgent, Backend: "scripted", Session: graph.SessionPersist, Prompt: "go",
		Script: []string{"WRITE: notes.txt = visit {{.Visit}}\nok"}})
}

// BenchmarkVisitToolWorkspace: a tool visit in the same workspace that
// changes nothing: start a process, find out nothing changed.
func BenchmarkVisitToolWorkspace(b *testing.B) {
	benchVisits(b, graph.Node{ID: "t", Kind: graph.KindTool, Run: []string{"true"}})
}

package console

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// withWorkspace opens run's snapshots for reading: the packs of states
// are fetched (checked as a worker checks them) into the console's cache,
// and f reads commits from them. Opens of one run wait for each other.
func (s *Server) withWorkspace(ctx context.Context, run string, states []*runstore.WorkspaceState, f func(w *workspace.Workspace) error) error {
	w, err := s.ws.Open(ctx, run, filepath.Join(s.cacheDir, "views", run))
	if err != nil {
		return err
	}
	defer w.Close()
	for _, st := range states {
		if st == nil || st.Commit == "" {
			continue
		}
		if err := w.Load(ctx, st); err != nil {
			return err
		}
	}
	return f(w)
}

// fileStat is a file's line of a change: what a list of files shows.
type fileStat struct {
	Path    string
	Status  string
	Added   int
	Removed int
	Binary  bool
	Large   bool
}

func statsOf(c *workspace.Change) (files []fileStat, added, removed int) {
	for _, f := range c.Files {
		files = append(files, fileStat{Path: f.Path, Status: f.Status, Added: f.Added, Removed: f.Removed, Binary: f.Binary, Large: f.Large})
		added += f.Added
		removed += f.Removed
	}
	return files, added, removed
}

// visitChange is the change the visit of node made: the commit
// "NODE visit N" at the head of one of states (the run's or a branch's,
// as the checkpoint after the visit recorded them), diffed with its
// parent. A visit that changed nothing made no commit: nil, nil.
func (s *Server) visitChange(ctx context.Context, run, node string, visit int, states []*runstore.WorkspaceState) (*workspace.Change, string, error) {
	want := fmt.Sprintf("%s visit %d", node, visit)
	var (
		change *workspace.Change
		commit string
	)
	err := s.withWorkspace(ctx, run, states, func(w *workspace.Workspace) error {
		for _, st := range states {
			if st == nil || st.Commit == "" {
				continue
			}
			parent, msg, err := w.Parent(st.Commit)
			if err != nil {
				return err
			}
			title, _, _ := strings.Cut(msg, "\n")
			if title != want && title != want+" (asked the user)" {
				continue
			}
			commit = st.Commit
			change, err = w.Changes(ctx, parent, st.Commit, workspace.ChangeLimits{})
			return err
		}
		return nil
	})
	return change, commit, err
}

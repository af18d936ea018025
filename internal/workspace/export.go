package workspace

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
)

// Export writes the snapshot st of run's workspace into dir: the files, and
// with history a .git directory holding every snapshot commit on branch
// main, so plain git shows what each visit changed (`git log -p`). dir
// must be empty or not exist.
func Export(ctx context.Context, blobs blob.Store, run string, st *runstore.WorkspaceState, dir string, history bool, lim Limits) error {
	if des, err := os.ReadDir(dir); err == nil && len(des) > 0 {
		return fmt.Errorf("workspace: export into %s: the directory is not empty", dir)
	}
	w, done, err := tempWorkspace(ctx, blobs, lim, run, dir)
	if err != nil {
		return err
	}
	defer done()
	if _, err := w.Restore(ctx, st); err != nil {
		return err
	}
	if !history || st == nil || st.Commit == "" {
		return nil
	}
	return w.writeRepo(ctx, filepath.Join(dir, ".git"), st.Commit, false)
}

// History writes a bare repository of run's snapshots up to st into
// gitDir, for `git log` and `git diff` to read.
func History(ctx context.Context, blobs blob.Store, run string, st *runstore.WorkspaceState, gitDir string, lim Limits) error {
	if st == nil || st.Commit == "" {
		return fmt.Errorf("workspace: run %s has no snapshot yet", run)
	}
	w, done, err := tempWorkspace(ctx, blobs, lim, run, "")
	if err != nil {
		return err
	}
	defer done()
	if _, _, _, err := w.load(ctx, st); err != nil {
		return err // a snapshot that would be refused is not handed to git either
	}
	return w.writeRepo(ctx, gitDir, st.Commit, true)
}

// tempWorkspace opens run's workspace at workdir ("": a directory of its
// own) on a manager whose local store is a temporary directory, for a
// command that reads a run's snapshots outside any worker. done closes the
// workspace and removes the directory.
func tempWorkspace(ctx context.Context, blobs blob.Store, lim Limits, run, workdir string) (w *Workspace, done func(), err error) {
	cache, err := os.MkdirTemp("", "tether-workspace-*")
	if err != nil {
		return nil, nil, err
	}
	if workdir == "" {
		workdir = filepath.Join(cache, "work")
	}
	if w, err = NewManager(cache, blobs, lim, nil).Open(ctx, run, workdir); err != nil {
		os.RemoveAll(cache)
		return nil, nil, err
	}
	return w, func() { w.Close(); os.RemoveAll(cache) }, nil
}

// writeRepo creates a git repository at gitDir holding the local packs of
// the run, with main at commit.
func (w *Workspace) writeRepo(ctx context.Context, gitDir, commit string, bare bool) error {
	var repo *git.Repository
	var err error
	if bare {
		repo, err = git.PlainInit(gitDir, true)
	} else {
		repo, err = git.PlainInit(filepath.Dir(gitDir), false)
	}
	if err != nil {
		return fmt.Errorf("workspace: create repository %s: %w", gitDir, err)
	}
	pw, ok := repo.Storer.(storer.PackfileWriter)
	if !ok {
		return fmt.Errorf("workspace: the repository at %s cannot take packs", gitDir)
	}
	w.store.mu.Lock()
	packs := make([]*localPack, 0, len(w.store.packs))
	for _, p := range w.store.packs {
		packs = append(packs, p)
	}
	w.store.mu.Unlock()
	for _, p := range packs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := copyPack(pw, p.path); err != nil {
			return fmt.Errorf("workspace: write pack into %s: %w", gitDir, err)
		}
	}
	h := plumbing.NewHash(commit)
	main := plumbing.NewBranchReferenceName("main")
	if err := repo.Storer.SetReference(plumbing.NewHashReference(main, h)); err != nil {
		return err
	}
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, main)); err != nil {
		return err
	}
	if bare {
		return nil
	}
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	// The files are there already; the index is made to match them.
	return wt.Reset(&git.ResetOptions{Commit: h, Mode: git.MixedReset})
}

func copyPack(pw storer.PackfileWriter, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dst, err := pw.PackfileWriter()
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, f); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

package workspace

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	return w.writeRepo(ctx, filepath.Join(dir, ".git"), st.Commit, nil, false)
}

// History writes a bare repository of run's snapshots up to st into
// gitDir, for `git log` and `git diff` to read.
func History(ctx context.Context, blobs blob.Store, run string, st *runstore.WorkspaceState, gitDir string, lim Limits) error {
	return HistoryWithBranches(ctx, blobs, run, st, nil, gitDir, lim)
}

// HistoryWithBranches is History with a branch refs/heads/<name> for each
// state of branches too (the branches of a fan-out), so that `git log
// --all --graph` shows them beside main. A name must be a plain branch
// name (ValidBranchName), and main is taken.
func HistoryWithBranches(ctx context.Context, blobs blob.Store, run string, st *runstore.WorkspaceState, branches map[string]*runstore.WorkspaceState, gitDir string, lim Limits) error {
	if st == nil || st.Commit == "" {
		return fmt.Errorf("workspace: run %s has no snapshot yet", run)
	}
	refs := map[string]string{}
	for name, b := range branches {
		if err := ValidBranchName(name); err != nil {
			return err
		}
		if name == "main" {
			return fmt.Errorf("workspace: branch name %q is taken by the run's own history", name)
		}
		if b != nil && b.Commit != "" {
			refs[name] = b.Commit
		}
	}
	w, done, err := tempWorkspace(ctx, blobs, lim, run, "")
	if err != nil {
		return err
	}
	defer done()
	if _, _, _, err := w.load(ctx, st); err != nil {
		return err // a snapshot that would be refused is not handed to git either
	}
	for name := range refs {
		if _, _, _, err := w.load(ctx, branches[name]); err != nil {
			return fmt.Errorf("workspace: branch %s: %w", name, err)
		}
	}
	return w.writeRepo(ctx, gitDir, st.Commit, refs, true)
}

// ValidBranchName checks that name can be a git branch name as it is, on
// a command line too: letters, digits and "-", "_", ".", "/"; no empty
// component, none starting with "." or ending with ".lock", no "..", and
// no leading "-".
func ValidBranchName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("workspace: branch name %q: %s", name, why)
	}
	if name == "" || len(name) > 200 {
		return bad("empty or longer than 200 bytes")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./", r)) {
			return bad("only letters, digits, '-', '_', '.' and '/' are allowed")
		}
	}
	if strings.HasPrefix(name, "-") {
		return bad("it starts with '-'")
	}
	if strings.Contains(name, "..") {
		return bad("it holds '..'")
	}
	for _, c := range strings.Split(name, "/") {
		if c == "" || strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".") || strings.HasSuffix(c, ".lock") {
			return bad("a component is empty, starts or ends with '.', or ends with .lock")
		}
	}
	return nil
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
// the run, with main at commit and refs/heads/<name> at each of branches.
func (w *Workspace) writeRepo(ctx context.Context, gitDir, commit string, branches map[string]string, bare bool) error {
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
	for name, c := range branches {
		ref := plumbing.NewHashReference(plumbing.NewBranchReferenceName(name), plumbing.NewHash(c))
		if err := repo.Storer.SetReference(ref); err != nil {
			return err
		}
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

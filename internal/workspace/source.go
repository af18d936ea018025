package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
)

// Source is what a run's workspace starts from: a directory, or a git
// repository (a path or a URL) at a ref.
type Source struct {
	// From is a directory, or a repository path or URL.
	From string
	// Ref is a branch, tag or commit of From; set only for a repository.
	// A repository path without Ref is imported as its directory is,
	// uncommitted changes included.
	Ref string
	// Auth authenticates a clone of a URL (nil: none). It stays in this
	// process: git runs in process, so no credential reaches a disk, an
	// environment or a remote's URL.
	Auth transport.AuthMethod
}

func (s Source) String() string {
	if s.Ref != "" {
		return s.From + "@" + s.Ref
	}
	return s.From
}

// isURL reports a source that names a remote repository.
func isURL(from string) bool {
	return strings.Contains(from, "://") || strings.HasPrefix(from, "git@")
}

// Import makes the first snapshot of run's workspace from src: it reads
// the files (from the directory, or from the repository at the ref, never
// its .git), applies the same rules and limits as every snapshot, uploads
// one pack to the store, and returns the state a run starts from.
func Import(ctx context.Context, blobs blob.Store, run string, src Source, lim Limits, now time.Time) (*runstore.WorkspaceState, Snapshotted, error) {
	var rep Snapshotted
	if src.From == "" {
		return nil, rep, fmt.Errorf("%w: no source given", ErrSource)
	}
	tmp, err := os.MkdirTemp("", "tether-import-*")
	if err != nil {
		return nil, rep, err
	}
	defer os.RemoveAll(tmp)
	dir := src.From
	var tracked map[string]bool
	if src.Ref != "" || isURL(src.From) {
		dir = filepath.Join(tmp, "tree")
		if tracked, rep.SourceCommit, err = checkoutRef(ctx, src, dir, withDefaults(lim)); err != nil {
			return nil, rep, err
		}
	} else if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, rep, fmt.Errorf("%w: %s: %v", ErrSource, src.From, err)
	}
	m := NewManager(filepath.Join(tmp, "cache"), blobs, lim, nil)
	w, err := m.Open(ctx, run, dir)
	if err != nil {
		return nil, rep, err
	}
	defer w.Close()
	w.fromSource = true
	if tracked != nil {
		// Every file of the commit is tracked: a .gitignore never drops a
		// committed file, as in git.
		x := &index{}
		for p := range tracked {
			x.Files = append(x.Files, indexFile{Path: p})
		}
		sortIndexFiles(x.Files)
		x.prepare()
		w.live.idx = x
	}
	commit := rep.SourceCommit
	st, rep, err := w.Snapshot(ctx, nil, CommitInfo{
		Message: "workspace from " + src.String(),
		Details: []string{"run: " + run, "source: " + src.String()},
		When:    now,
	})
	rep.SourceCommit = commit
	if err != nil {
		return nil, rep, err
	}
	st.Base = st.Commit
	return st, rep, nil
}

// checkoutRef writes the files of the repository at src.Ref into dir and
// returns their paths and the commit they are of. Paths, modes, link
// targets and limits are checked as for a restore; submodules are left
// out.
func checkoutRef(ctx context.Context, src Source, dir string, lim Limits) (map[string]bool, string, error) {
	var repo *git.Repository
	var err error
	if isURL(src.From) {
		opts := &git.CloneOptions{URL: src.From, Depth: 1, SingleBranch: true, Tags: git.NoTags, Auth: src.Auth}
		if src.Ref != "" && !plumbing.IsHash(src.Ref) {
			opts.ReferenceName = plumbing.ReferenceName(src.Ref)
			if !strings.HasPrefix(src.Ref, "refs/") {
				opts.ReferenceName = plumbing.NewBranchReferenceName(src.Ref)
			}
		}
		repo, err = git.CloneContext(ctx, memory.NewStorage(), nil, opts)
		if err != nil && opts.ReferenceName.IsBranch() {
			// Maybe a tag.
			opts.ReferenceName = plumbing.NewTagReferenceName(src.Ref)
			repo, err = git.CloneContext(ctx, memory.NewStorage(), nil, opts)
		}
	} else {
		repo, err = git.PlainOpenWithOptions(src.From, &git.PlainOpenOptions{DetectDotGit: true})
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %v", ErrSource, src.From, err)
	}
	ref := src.Ref
	if ref == "" {
		ref = "HEAD"
	}
	h, err := repo.ResolveRevision(plumbing.Revision(ref))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s has no ref %q: %v", ErrSource, src.From, ref, err)
	}
	commit, err := repo.CommitObject(*h)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s@%s: %v", ErrSource, src.From, ref, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s@%s: %v", ErrSource, src.From, ref, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	tracked := map[string]bool{}
	parents := map[string]bool{}
	var total int64
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		name, e, err := walker.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", fmt.Errorf("%w: %s@%s: %v", ErrSource, src.From, ref, err)
		}
		if e.Mode == filemode.Dir || e.Mode == filemode.Submodule {
			continue
		}
		if err := checkPath(name, lim); err != nil {
			return nil, "", err
		}
		if loginPath(name) {
			continue
		}
		b, err := repo.BlobObject(e.Hash)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %s: %v", ErrSource, name, err)
		}
		if b.Size > lim.MaxFileBytes {
			return nil, "", fmt.Errorf("%w: %s is %d bytes, over the %d-byte single-file limit", ErrTooLarge, name, b.Size, lim.MaxFileBytes)
		}
		if total += b.Size; total > lim.MaxTotalBytes || len(tracked) >= lim.MaxFiles {
			return nil, "", fmt.Errorf("%w: %s@%s is over the workspace limits (%d files, %d bytes)", ErrTooLarge, src.From, ref, lim.MaxFiles, lim.MaxTotalBytes)
		}
		content, err := blobContent(b)
		if err != nil {
			return nil, "", err
		}
		if err := makeParents(root, name, parents); err != nil {
			return nil, "", err
		}
		switch e.Mode {
		case filemode.Symlink:
			if checkLink(name, string(content)) != nil {
				continue
			}
			err = root.Symlink(string(content), name)
		case filemode.Executable:
			err = root.WriteFile(name, content, 0o755)
		default:
			err = root.WriteFile(name, content, 0o644)
		}
		if err != nil {
			return nil, "", fmt.Errorf("workspace: write %s: %w", name, err)
		}
		tracked[name] = true
	}
	return tracked, h.String(), nil
}

func blobContent(b *object.Blob) ([]byte, error) {
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

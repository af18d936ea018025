package forge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// Import makes the first snapshot of run's workspace from repo at ref,
// cloned with the installation's token, and returns it with the commit it
// was made from.
func (f *Forge) Import(ctx context.Context, installation int64, blobs blob.Store, run, repo, ref string, lim workspace.Limits, now time.Time) (*runstore.WorkspaceState, string, error) {
	auth, err := f.gitAuth(ctx, installation)
	if err != nil {
		return nil, "", err
	}
	st, rep, err := workspace.Import(ctx, blobs, run, workspace.Source{From: f.CloneURL(repo), Ref: ref, Auth: auth}, lim, now)
	if err != nil {
		return nil, "", err
	}
	return st, rep.SourceCommit, nil
}

// Pushed is what a push of a run's commits did.
type Pushed struct {
	// Head is the branch's commit now; Commits how many commits it holds
	// over the base.
	Head    string
	Commits int
}

// ErrDiverged is a run's branch that holds commits the run did not make
// (someone pushed to it): the run does not overwrite them.
var ErrDiverged = errors.New("forge: the run's branch holds commits the run did not make")

// PushRun pushes the commits of run's workspace history up to st (one
// per visit that changed files, as `tether workspace RUN log` lists them)
// to branch of repo, on top of baseCommit (the commit the run's files came
// from). Each commit keeps its message, author, committer and times and
// gets the tree of the base with the run's changes up to it, so the same
// history always makes the same commits: a push retried, or made again by
// another worker, is a fast-forward or nothing. A branch that holds
// commits the run did not make is left alone (ErrDiverged).
func (f *Forge) PushRun(ctx context.Context, installation int64, blobs blob.Store, lim workspace.Limits, run string, st *runstore.WorkspaceState, repo, branch, base, baseCommit string) (*Pushed, error) {
	if st == nil || st.Commit == "" || st.Base == "" {
		return nil, fmt.Errorf("forge: run %s has no workspace to push", run)
	}
	auth, err := f.gitAuth(ctx, installation)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "tether-push-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	gitDir := filepath.Join(tmp, "run.git")
	if err := workspace.History(ctx, blobs, run, st, gitDir, lim); err != nil {
		return nil, fmt.Errorf("forge: run %s's history: %w", run, err)
	}
	r, err := git.PlainOpen(gitDir)
	if err != nil {
		return nil, err
	}
	// The remote by its URL alone: the token goes to the transport, and
	// the repository's config (on a temporary disk) never holds it.
	if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{f.CloneURL(repo)}}); err != nil {
		return nil, err
	}
	err = r.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", Auth: auth, Tags: git.NoTags,
		RefSpecs: []config.RefSpec{config.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", base, base))}})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, fmt.Errorf("forge: fetch %s of %s: %w", base, repo, err)
	}
	// The run's branch, if it exists, to know what is there already.
	remoteRun := plumbing.NewRemoteReferenceName("origin", branch)
	err = r.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", Auth: auth, Tags: git.NoTags,
		RefSpecs: []config.RefSpec{config.RefSpec(fmt.Sprintf("+refs/heads/%s:%s", branch, remoteRun))}})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) && !isNoMatch(err) {
		return nil, fmt.Errorf("forge: fetch %s of %s: %w", branch, repo, err)
	}
	head, n, err := rebuild(r.Storer, plumbing.NewHash(st.Commit), plumbing.NewHash(st.Base), plumbing.NewHash(baseCommit))
	if err != nil {
		return nil, fmt.Errorf("forge: run %s: %w", run, err)
	}
	if cur, err := r.Reference(remoteRun, true); err == nil {
		if cur.Hash() == head {
			return &Pushed{Head: head.String(), Commits: n}, nil
		}
		if ok, err := ancestor(r.Storer, cur.Hash(), head); err != nil || !ok {
			return nil, fmt.Errorf("%w: %s of %s is at %s; the run leaves it as it is (delete the branch, or close the pull request)", ErrDiverged, branch, repo, cur.Hash())
		}
	}
	local := plumbing.NewBranchReferenceName(branch)
	if err := r.Storer.SetReference(plumbing.NewHashReference(local, head)); err != nil {
		return nil, err
	}
	err = r.PushContext(ctx, &git.PushOptions{RemoteName: "origin", Auth: auth,
		RefSpecs: []config.RefSpec{config.RefSpec(fmt.Sprintf("%s:refs/heads/%s", local, branch))}})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, fmt.Errorf("forge: push %s to %s: %w", branch, repo, err)
	}
	return &Pushed{Head: head.String(), Commits: n}, nil
}

func isNoMatch(err error) bool {
	var nm git.NoMatchingRefSpecError
	return errors.As(err, &nm)
}

// ancestor reports whether a is b or one of its ancestors.
func ancestor(s storer.EncodedObjectStorer, a, b plumbing.Hash) (bool, error) {
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{b}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h == a {
			return true, nil
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := object.GetCommit(s, h)
		if err != nil {
			return false, err
		}
		queue = append(queue, c.ParentHashes...)
	}
	return false, nil
}

// rebuild makes, on top of upstream, one commit per commit of the run's
// history from runBase (excluded) to tip along first parents, each with
// its tree applied to upstream's as a three-way change, and returns the
// last one and how many it made.
func rebuild(s storer.Storer, tip, runBase, upstream plumbing.Hash) (plumbing.Hash, int, error) {
	var line []*object.Commit
	for h := tip; h != runBase; {
		c, err := object.GetCommit(s, h)
		if err != nil {
			return plumbing.ZeroHash, 0, fmt.Errorf("the run's commit %s: %w", h, err)
		}
		line = append(line, c)
		if len(c.ParentHashes) == 0 {
			return plumbing.ZeroHash, 0, fmt.Errorf("the run's history does not lead from %s to its base %s", tip, runBase)
		}
		h = c.ParentHashes[0]
	}
	up, err := object.GetCommit(s, upstream)
	if err != nil {
		return plumbing.ZeroHash, 0, fmt.Errorf("the base commit %s: %w", upstream, err)
	}
	baseCommit, err := object.GetCommit(s, runBase)
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	ours, prevRun, parent := up.TreeHash, baseCommit.TreeHash, upstream
	for i := len(line) - 1; i >= 0; i-- {
		c := line[i]
		tree, err := merge3(s, ours, prevRun, c.TreeHash)
		if err != nil {
			return plumbing.ZeroHash, 0, err
		}
		nc := &object.Commit{Author: c.Author, Committer: c.Committer, Message: c.Message, TreeHash: tree, ParentHashes: []plumbing.Hash{parent}}
		obj := s.NewEncodedObject()
		if err := nc.Encode(obj); err != nil {
			return plumbing.ZeroHash, 0, err
		}
		if parent, err = s.SetEncodedObject(obj); err != nil {
			return plumbing.ZeroHash, 0, err
		}
		ours, prevRun = tree, c.TreeHash
	}
	return parent, len(line), nil
}

// merge3 applies the change from base to theirs onto ours, tree by tree:
// where theirs changed a name, theirs wins; everything else is ours.
func merge3(s storer.EncodedObjectStorer, ours, base, theirs plumbing.Hash) (plumbing.Hash, error) {
	switch {
	case base == theirs:
		return ours, nil
	case ours == base:
		return theirs, nil
	}
	get := func(h plumbing.Hash) (map[string]object.TreeEntry, error) {
		out := map[string]object.TreeEntry{}
		if h.IsZero() {
			return out, nil
		}
		t, err := object.GetTree(s, h)
		if err != nil {
			return nil, err
		}
		for _, e := range t.Entries {
			out[e.Name] = e
		}
		return out, nil
	}
	o, err := get(ours)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	b, err := get(base)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	t, err := get(theirs)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	names := map[string]bool{}
	for _, m := range []map[string]object.TreeEntry{o, b, t} {
		for n := range m {
			names[n] = true
		}
	}
	var entries []object.TreeEntry
	for n := range names {
		eo, inO := o[n]
		eb, inB := b[n]
		et, inT := t[n]
		switch {
		case inB == inT && eb == et: // theirs did not touch it
			if inO {
				entries = append(entries, eo)
			}
		case !inT: // theirs deleted it
		case inO && eo.Mode == filemode.Dir && et.Mode == filemode.Dir:
			var bh plumbing.Hash
			if inB && eb.Mode == filemode.Dir {
				bh = eb.Hash
			}
			h, err := merge3(s, eo.Hash, bh, et.Hash)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, object.TreeEntry{Name: n, Mode: filemode.Dir, Hash: h})
		default:
			entries = append(entries, et)
		}
	}
	sort.Slice(entries, func(i, j int) bool { return treeName(entries[i]) < treeName(entries[j]) })
	tree := &object.Tree{Entries: entries}
	obj := s.NewEncodedObject()
	if err := tree.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// treeName is how git orders a tree's entries: a directory as if its name
// ended in "/".
func treeName(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

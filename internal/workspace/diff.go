package workspace

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Diff returns the unified diff (git's format) from commit from ("": the
// empty tree) to commit to, both of this run, cut after max bytes with a
// note saying so. The workspace must hold both commits' objects: to is the
// snapshot it was restored to or took, from one of its ancestors.
func (w *Workspace) Diff(ctx context.Context, from, to string, max int) (string, error) {
	patch, err := w.patch(ctx, from, to)
	if err != nil {
		return "", err
	}
	out := patch.String()
	if max > 0 && len(out) > max {
		out = out[:max] + fmt.Sprintf("\n… [diff cut at %d of %d bytes]\n", max, len(out))
	}
	return out, nil
}

// DiffStat sums what changed between two commits, as `git diff --numstat`
// does: a binary file (or one whose mode alone changed) counts as a
// changed file with no lines.
type DiffStat struct {
	Files   int `json:"files"`
	Added   int `json:"added"`
	Removed int `json:"removed"`
}

// Stat returns the files changed and the lines added and removed from
// commit from ("": the empty tree) to commit to. The workspace must hold
// both commits' objects (Load the states naming them first).
func (w *Workspace) Stat(ctx context.Context, from, to string) (DiffStat, error) {
	var st DiffStat
	patch, err := w.patch(ctx, from, to)
	if err != nil {
		return st, err
	}
	for _, fp := range patch.FilePatches() {
		st.Files++
		if fp.IsBinary() {
			continue
		}
		for _, c := range fp.Chunks() {
			s := c.Content()
			if s == "" {
				continue
			}
			n := strings.Count(s, "\n")
			if s[len(s)-1] != '\n' {
				n++
			}
			switch c.Type() {
			case fdiff.Add:
				st.Added += n
			case fdiff.Delete:
				st.Removed += n
			}
		}
	}
	return st, nil
}

// patch is go-git's patch from commit from ("": the empty tree) to to.
func (w *Workspace) patch(ctx context.Context, from, to string) (*object.Patch, error) {
	a, b, err := w.commitTrees(from, to)
	if err != nil {
		return nil, err
	}
	patch, err := a.PatchContext(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("workspace: diff: %w", err)
	}
	return patch, nil
}

// storeObjects lets go-git read a run's objects from the local store.
type storeObjects struct{ s *objectStore }

var _ storer.EncodedObjectStorer = storeObjects{}

func (o storeObjects) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

func (o storeObjects) SetEncodedObject(plumbing.EncodedObject) (plumbing.Hash, error) {
	return plumbing.ZeroHash, fmt.Errorf("workspace: the object store is read-only here")
}

func (o storeObjects) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	got, content, err := o.s.read(h)
	if err != nil {
		return nil, plumbing.ErrObjectNotFound
	}
	if t != plumbing.AnyObject && got != t {
		return nil, plumbing.ErrObjectNotFound
	}
	mo := &plumbing.MemoryObject{}
	mo.SetType(got)
	if _, err := mo.Write(content); err != nil {
		return nil, err
	}
	return mo, nil
}

func (o storeObjects) IterEncodedObjects(plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return nil, fmt.Errorf("workspace: iterating objects is not supported")
}

func (o storeObjects) HasEncodedObject(h plumbing.Hash) error {
	if o.s.has(h) {
		return nil
	}
	return plumbing.ErrObjectNotFound
}

func (o storeObjects) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	l, ok := o.s.lookup(h)
	if !ok {
		return 0, plumbing.ErrObjectNotFound
	}
	return l.entry().size, nil
}

func (o storeObjects) AddAlternate(string) error { return nil }

package workspace

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Author is the author and committer of every snapshot commit.
var Author = object.Signature{Name: "Tether", Email: "tether@localhost"}

// CommitInfo says what a snapshot records: which visit made it, and when.
type CommitInfo struct {
	// Message is the first line ("writer visit 3").
	Message string
	// Details are "key: value" lines of the message body.
	Details []string
	// When is the commit time. Callers pass the visit's start time from
	// the workflow, so a retried snapshot of the same files is the same
	// commit.
	When time.Time
	// Parents are the commit's parents after the first (the snapshot it is
	// taken on): the branch heads a merge commit joins. Merge sets them.
	Parents []string
}

func encodeObject(encode func(o plumbing.EncodedObject) error) (plumbing.Hash, []byte, error) {
	o := &plumbing.MemoryObject{}
	if err := encode(o); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	r, err := o.Reader()
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	return o.Hash(), b, nil
}

// treeEntry is one name in a directory.
type treeEntry struct {
	name string
	mode filemode.FileMode
	hash plumbing.Hash
}

// encodeTree returns the id and content of a tree of entries, sorted as git
// sorts them (a directory compares as its name plus "/").
func encodeTree(entries []treeEntry) (plumbing.Hash, []byte, error) {
	t := &object.Tree{Entries: make([]object.TreeEntry, len(entries))}
	for i, e := range entries {
		t.Entries[i] = object.TreeEntry{Name: e.name, Mode: e.mode, Hash: e.hash}
	}
	sort.Sort(object.TreeEntrySorter(t.Entries))
	return encodeObject(t.Encode)
}

func encodeCommit(tree plumbing.Hash, parent string, info CommitInfo) (plumbing.Hash, []byte, error) {
	sig := Author
	sig.When = info.When.UTC().Truncate(time.Second)
	msg := strings.TrimSpace(info.Message)
	if len(info.Details) > 0 {
		msg += "\n\n" + strings.Join(info.Details, "\n")
	}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg + "\n", TreeHash: tree}
	if parent != "" {
		c.ParentHashes = []plumbing.Hash{plumbing.NewHash(parent)}
	}
	for _, p := range info.Parents {
		h, err := parseHash(p)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		c.ParentHashes = append(c.ParentHashes, h)
	}
	return encodeObject(c.Encode)
}

// decodeTree parses a tree's content strictly.
func decodeTree(h plumbing.Hash, content []byte) ([]treeEntry, error) {
	t, err := decodeStrict(h, plumbing.TreeObject, content, func(o plumbing.EncodedObject) (*object.Tree, error) {
		return object.DecodeTree(nil, o)
	})
	if err != nil {
		return nil, err
	}
	var entries []treeEntry
	for _, e := range t.Entries {
		entries = append(entries, treeEntry{name: e.Name, mode: e.Mode, hash: e.Hash})
	}
	return entries, nil
}

// decodeCommit returns a commit's tree and parent.
func decodeCommit(h plumbing.Hash, content []byte) (tree plumbing.Hash, parents []plumbing.Hash, msg string, err error) {
	c, err := decodeStrict(h, plumbing.CommitObject, content, func(o plumbing.EncodedObject) (*object.Commit, error) {
		return object.DecodeCommit(nil, o)
	})
	if err != nil {
		return tree, nil, "", err
	}
	return c.TreeHash, c.ParentHashes, c.Message, nil
}

// decodeStrict decodes content, an object of type typ named h, with
// go-git's decode: a failure, or a panic of the decoder on hostile bytes,
// is ErrCorrupt naming the object.
func decodeStrict[T any](h plumbing.Hash, typ plumbing.ObjectType, content []byte, decode func(plumbing.EncodedObject) (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s %s: %v", ErrCorrupt, typ, h, p)
		}
	}()
	o := &plumbing.MemoryObject{}
	o.SetType(typ)
	if _, err := o.Write(content); err != nil {
		return v, err
	}
	v, err = decode(o)
	if err != nil {
		return v, fmt.Errorf("%w: %s %s: %v", ErrCorrupt, typ, h, err)
	}
	return v, nil
}

// parseHash reads a commit id written in a checkpoint.
func parseHash(s string) (plumbing.Hash, error) {
	if len(s) != 40 || !plumbing.IsHash(s) {
		return plumbing.ZeroHash, fmt.Errorf("%w: %q is not a commit id", ErrCorrupt, s)
	}
	return plumbing.NewHash(s), nil
}

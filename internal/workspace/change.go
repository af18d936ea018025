package workspace

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/go-git/go-git/v5/utils/merkletrie"
	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/tether-run/tether/internal/treepolicy"
)

// FileChange is what one file's change between two commits looks like to
// a person: its lines, numbered, with a few of the lines around them. A
// binary file, or one too large to show, is named with its sizes and no
// lines. Everything in it comes from a snapshot, which an agent wrote: a
// page must escape it.
type FileChange struct {
	// Path is the file's path after the change (before it, for a deleted
	// file); OldPath is set when the file was renamed.
	Path    string `json:"path"`
	OldPath string `json:"old_path,omitempty"`
	// Status is "added", "deleted", "modified" or "renamed".
	Status string `json:"status"`
	// Binary and Large say why Hunks is empty: the file holds a NUL byte,
	// or a side is over ChangeLimits.MaxFileBytes (its lines are then
	// not counted either). Cut says the lines shown stop at
	// ChangeLimits.MaxLines.
	Binary bool `json:"binary,omitempty"`
	Large  bool `json:"large,omitempty"`
	Cut    bool `json:"cut,omitempty"`
	// OldSize and NewSize are the file's sizes in bytes on each side.
	OldSize int64 `json:"old_size"`
	NewSize int64 `json:"new_size"`
	// Added and Removed count the lines, as `git diff --numstat` does.
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Hunks   []Hunk `json:"hunks,omitempty"`
}

// Hunk is a run of changed lines and their context.
type Hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
	Lines              []DiffLine
}

// DiffLine is one line of a hunk: ' ' context, '+' added, '-' removed,
// with its number on the side(s) it is on (0 where it is not).
type DiffLine struct {
	Op   byte
	Old  int
	New  int
	Text string
}

// ChangeLimits bound what Changes reads and returns: a change of a
// hundred thousand files, or of one huge file, is named, not dumped.
type ChangeLimits struct {
	// MaxFileBytes is the largest side of a file whose lines are shown.
	MaxFileBytes int64
	// MaxLines is how many diff lines all files together show.
	MaxLines int
	// MaxFiles is how many files are listed; the rest are counted.
	MaxFiles int
	// Context is the number of unchanged lines around each change.
	Context int
}

// DefaultChangeLimits show what a person can read on one page.
func DefaultChangeLimits() ChangeLimits {
	return ChangeLimits{MaxFileBytes: 512 << 10, MaxLines: 20000, MaxFiles: 1000, Context: 3}
}

// Change is the files changed between two commits, in path order.
type Change struct {
	Files []FileChange
	// More counts the files changed beyond ChangeLimits.MaxFiles.
	More int
}

// diffTimeout bounds the line diff of one file: past it, the rest of the
// file shows as removed and added, as git's own diff would give up.
const diffTimeout = 2 * time.Second

// Changes returns what changed from commit from ("": the empty tree) to
// commit to, per file. The workspace must hold both commits' objects
// (Load the states naming them first).
func (w *Workspace) Changes(ctx context.Context, from, to string, lim ChangeLimits) (*Change, error) {
	def := DefaultChangeLimits()
	lim.MaxFileBytes = treepolicy.OrDefault(lim.MaxFileBytes, def.MaxFileBytes)
	lim.MaxLines = treepolicy.OrDefault(lim.MaxLines, def.MaxLines)
	lim.MaxFiles = treepolicy.OrDefault(lim.MaxFiles, def.MaxFiles)
	if lim.Context < 0 {
		lim.Context = 0
	}
	s := storeObjects{w.store}
	a, b, err := w.commitTrees(from, to)
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTreeWithOptions(ctx, a, b, object.DefaultDiffTreeOptions)
	if err != nil {
		return nil, fmt.Errorf("workspace: diff: %w", err)
	}
	out := &Change{}
	lines := 0
	for _, c := range changes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(out.Files) >= lim.MaxFiles {
			out.More++
			continue
		}
		fc, err := fileChange(s, c, lim, lim.MaxLines-lines)
		if err != nil {
			return nil, err
		}
		for _, h := range fc.Hunks {
			lines += len(h.Lines)
		}
		out.Files = append(out.Files, fc)
	}
	return out, nil
}

// Parent is the first parent of commit ("" for the run's first snapshot),
// and its message.
func (w *Workspace) Parent(commit string) (parent, message string, err error) {
	h, err := parseHash(commit)
	if err != nil {
		return "", "", err
	}
	_, content, err := w.store.read(h)
	if err != nil {
		return "", "", fmt.Errorf("workspace: commit %s: %w", commit, err)
	}
	_, parents, msg, err := decodeCommit(h, content)
	if err != nil {
		return "", "", err
	}
	if len(parents) > 0 {
		parent = parents[0].String()
	}
	return parent, strings.TrimSpace(msg), nil
}

// commitTree is the tree of commit ("": the empty tree).
func (w *Workspace) commitTree(commit string) (*object.Tree, error) {
	s := storeObjects{w.store}
	if commit == "" {
		return &object.Tree{}, nil
	}
	h, err := parseHash(commit)
	if err != nil {
		return nil, err
	}
	c, err := object.GetCommit(s, h)
	if err != nil {
		return nil, fmt.Errorf("workspace: diff: commit %s: %w", commit, err)
	}
	return c.Tree()
}

// commitTrees is the trees of commits from and to ("": the empty tree).
func (w *Workspace) commitTrees(from, to string) (a, b *object.Tree, err error) {
	if a, err = w.commitTree(from); err != nil {
		return nil, nil, err
	}
	if b, err = w.commitTree(to); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

func fileChange(s storeObjects, c *object.Change, lim ChangeLimits, room int) (FileChange, error) {
	var fc FileChange
	action, err := c.Action()
	if err != nil {
		return fc, fmt.Errorf("workspace: diff: %w", err)
	}
	switch action {
	case merkletrie.Insert:
		fc.Status, fc.Path = "added", c.To.Name
	case merkletrie.Delete:
		fc.Status, fc.Path = "deleted", c.From.Name
	default:
		fc.Status, fc.Path = "modified", c.To.Name
		if c.From.Name != c.To.Name {
			fc.Status, fc.OldPath = "renamed", c.From.Name
		}
	}
	side := func(e object.ChangeEntry) (content []byte, size int64, ok bool, err error) {
		if e.Name == "" {
			return nil, 0, true, nil
		}
		h := e.TreeEntry.Hash
		if e.TreeEntry.Mode == filemode.Submodule {
			return nil, 0, false, nil
		}
		if size, err = s.EncodedObjectSize(h); err != nil {
			return nil, 0, false, fmt.Errorf("workspace: diff %s: %w", e.Name, err)
		}
		if size > lim.MaxFileBytes {
			return nil, size, false, nil
		}
		if content, err = s.s.readAs(h, plumbing.BlobObject); err != nil {
			return nil, size, false, fmt.Errorf("workspace: diff %s: %w", e.Name, err)
		}
		return content, size, true, nil
	}
	old, oldSize, okOld, err := side(c.From)
	if err != nil {
		return fc, err
	}
	cur, newSize, okNew, err := side(c.To)
	if err != nil {
		return fc, err
	}
	fc.OldSize, fc.NewSize = oldSize, newSize
	if !okOld || !okNew {
		fc.Large = true
		return fc, nil
	}
	if isBinary(old) || isBinary(cur) {
		fc.Binary = true
		return fc, nil
	}
	fc.Hunks, fc.Added, fc.Removed, fc.Cut = hunks(string(old), string(cur), lim.Context, room)
	return fc, nil
}

// hunks diffs two texts by line into numbered hunks with ctx lines of
// context, showing at most room lines in all (cut says some were left
// out); added and removed count every changed line.
func hunks(old, cur string, ctx, room int) (out []Hunk, added, removed int, cut bool) {
	var all []DiffLine
	o, n := 1, 1
	for _, d := range diff.DoWithTimeout(old, cur, diffTimeout) {
		for _, l := range splitLines(d.Text) {
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				all = append(all, DiffLine{Op: ' ', Old: o, New: n, Text: l})
				o++
				n++
			case diffmatchpatch.DiffDelete:
				all = append(all, DiffLine{Op: '-', Old: o, Text: l})
				o++
				removed++
			case diffmatchpatch.DiffInsert:
				all = append(all, DiffLine{Op: '+', New: n, Text: l})
				n++
				added++
			}
		}
	}
	shown := 0
	for i := 0; i < len(all); {
		if all[i].Op == ' ' {
			i++
			continue
		}
		start := max(0, i-ctx)
		end := i
		// Extend over changes and the context between them.
		for end < len(all) {
			if all[end].Op != ' ' {
				end++
				continue
			}
			next := end
			for next < len(all) && all[next].Op == ' ' && next-end < 2*ctx+1 {
				next++
			}
			if next < len(all) && all[next].Op != ' ' {
				end = next
				continue
			}
			end = min(len(all), end+ctx)
			break
		}
		lines := all[start:end]
		if shown+len(lines) > room {
			lines = lines[:max(0, room-shown)]
			cut = true
		}
		if len(lines) > 0 {
			out = append(out, newHunk(lines))
			shown += len(lines)
		}
		if cut {
			break
		}
		i = end
	}
	return out, added, removed, cut
}

func newHunk(lines []DiffLine) Hunk {
	h := Hunk{Lines: lines}
	for _, l := range lines {
		if l.Old > 0 {
			if h.OldStart == 0 {
				h.OldStart = l.Old
			}
			h.OldLines++
		}
		if l.New > 0 {
			if h.NewStart == 0 {
				h.NewStart = l.New
			}
			h.NewLines++
		}
	}
	return h
}

// splitLines cuts text after each newline; a last line without one is a
// line too.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\n")
	}
	return lines
}

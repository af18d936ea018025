package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/tether-run/tether/internal/runstore"
)

// MergeBranch is one branch of a fan-out to merge: its name (for conflict
// markers and reports) and its state, a line of commits starting at the
// trunk's commit at the fan-out.
type MergeBranch struct {
	Name  string
	State *runstore.WorkspaceState
}

// Conflict is a path where a branch's changes collide with the changes
// merged before it.
type Conflict struct {
	Path string `json:"path"`
	// Branches are the branches whose changes collide here: the earlier
	// ones that changed the path, then the one being merged.
	Branches []string `json:"branches"`
	// Ours is the file as merged so far (before this branch), cut at
	// 8 KiB, "" if absent; a link is its target.
	Ours string `json:"ours"`
	// Theirs is the branch's version, cut at 8 KiB, "" if deleted.
	Theirs string `json:"theirs"`
}

// Merged says what a merge did.
type Merged struct {
	// Changed is false when no branch changed anything: no commit.
	Changed   bool
	Conflicts []Conflict
	// Uploaded counts the pack bytes written to the blob store.
	Uploaded int64
	// Notes are the snapshot's notes (what it left out and why).
	Notes []string
}

// conflictCut caps each side of a Conflict.
const conflictCut = 8 << 10

// version is one side's file at a path: mode and blob, and the content
// when it was merged here (not in the store yet).
type version struct {
	mode    filemode.FileMode
	hash    plumbing.Hash
	link    string
	content []byte
}

func sameVersion(a, b *version) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.mode == b.mode && a.hash == b.hash
}

func versions(ts []target) map[string]*version {
	m := make(map[string]*version, len(ts))
	for _, t := range ts {
		m[t.path] = &version{mode: t.mode, hash: t.hash, link: t.link}
	}
	return m
}

// UnionPacks returns every pack of lists once (by key), in order: the
// first list's first.
func UnionPacks(lists ...[]runstore.WorkspacePack) []runstore.WorkspacePack {
	var out []runstore.WorkspacePack
	seen := map[string]bool{}
	for _, l := range lists {
		for _, p := range l {
			if !seen[p.Key] {
				seen[p.Key] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// Merge joins the branches of a fan-out. It restores the directory to
// trunk (the trunk at the fan-out, every branch's merge base), applies
// each branch in order as a three-way merge (base trunk, ours the
// directory as merged so far, theirs the branch's head), then snapshots
// the result with info as a commit whose parents are trunk.Commit and the
// head of every branch that moved. Its pack list is the union of the
// trunk's and every branch's packs plus the new pack; its Commits counts
// the trunk's, each branch's own, and the merge commit.
//
// Per path (files and links, by blob and mode): what only the branch
// changed is taken; what both changed alike stays; what both changed
// differently is merged by `git merge-file` (an add/add with an empty
// base), conflict markers and a Conflict where the changes overlap. A
// delete against a change, a file against a link or directory, a link
// changed on both sides and a binary file changed on both sides are
// conflicts that keep ours. When no branch moved from trunk it returns
// trunk, with Changed false.
func (w *Workspace) Merge(ctx context.Context, trunk *runstore.WorkspaceState, branches []MergeBranch, info CommitInfo) (*runstore.WorkspaceState, Merged, error) {
	var rep Merged
	if trunk == nil {
		trunk = &runstore.WorkspaceState{}
	}
	seenName := map[string]bool{}
	for _, b := range branches {
		if b.State == nil {
			return nil, rep, fmt.Errorf("workspace: merge: branch %q has no state", b.Name)
		}
		if seenName[b.Name] {
			return nil, rep, fmt.Errorf("workspace: merge: branch %q is named twice", b.Name)
		}
		seenName[b.Name] = true
	}
	baseT, baseTrees, _, err := w.load(ctx, trunk)
	if err != nil {
		return nil, rep, err
	}
	heads := make([][]target, len(branches))
	for i, b := range branches {
		if b.State.Commit == trunk.Commit {
			continue
		}
		if heads[i], _, _, err = w.load(ctx, b.State); err != nil {
			return nil, rep, fmt.Errorf("workspace: merge: branch %s: %w", b.Name, err)
		}
	}
	if !w.holds(trunk.Commit) {
		if _, err := w.restoreLoaded(ctx, trunk, baseT, baseTrees, Restored{}); err != nil {
			return nil, rep, err
		}
	}
	var parents []string
	commits := trunk.Commits
	lists := [][]runstore.WorkspacePack{trunk.Packs}
	for _, b := range branches {
		lists = append(lists, b.State.Packs)
		if b.State.Commit != trunk.Commit && !slices.Contains(parents, b.State.Commit) {
			parents = append(parents, b.State.Commit)
			commits += max(0, b.State.Commits-trunk.Commits)
		}
	}
	if len(parents) == 0 {
		return trunk, rep, nil
	}
	// With an empty trunk there is no first parent: the heads alone are.
	info.Parents = parents

	// From here on the directory is no longer trunk's.
	w.Touched()
	root, err := os.OpenRoot(w.workdir)
	if err != nil {
		return nil, rep, err
	}
	defer root.Close()
	m := &merger{
		w: w, ctx: ctx, root: root, base: versions(baseT), made: map[string]bool{},
		changedBy: map[string][]string{}, dirs: map[string]int{},
	}
	defer m.cleanup()
	m.ours = versions(baseT)
	for p := range m.ours {
		m.countDirs(p, 1)
	}
	for i, b := range branches {
		if b.State.Commit == trunk.Commit {
			continue
		}
		if err := m.apply(b.Name, versions(heads[i])); err != nil {
			return nil, rep, err
		}
	}
	rep.Conflicts = m.conflicts

	cur := &runstore.WorkspaceState{
		Commit: trunk.Commit, Base: trunk.Base, Packs: UnionPacks(lists...),
		Files: trunk.Files, Bytes: trunk.Bytes, Commits: commits, Notes: trunk.Notes,
	}
	st, snap, err := w.Snapshot(ctx, cur, info)
	if err != nil {
		return nil, rep, err
	}
	rep.Changed, rep.Uploaded, rep.Notes = snap.Changed, snap.Uploaded, snap.Notes
	return st, rep, nil
}

// merger applies branches to the directory, one after the other.
type merger struct {
	w    *Workspace
	ctx  context.Context
	root *os.Root
	made map[string]bool
	base map[string]*version
	ours map[string]*version
	// changedBy names the branches merged so far that changed each path.
	changedBy map[string][]string
	// dirs counts the files of ours under each directory.
	dirs      map[string]int
	conflicts []Conflict
	// tmp holds merge-file's inputs and home; made on first use.
	tmp string
}

func (m *merger) cleanup() {
	if m.tmp != "" {
		os.RemoveAll(m.tmp)
	}
}

func (m *merger) countDirs(p string, n int) {
	for d := dirOf(p); d != ""; d = dirOf(d) {
		m.dirs[d] += n
	}
}

// apply merges one branch whose files are theirs.
func (m *merger) apply(name string, theirs map[string]*version) error {
	var paths []string
	for p, t := range theirs {
		if !sameVersion(m.base[p], t) {
			paths = append(paths, p)
		}
	}
	for p := range m.base {
		if theirs[p] == nil {
			paths = append(paths, p)
		}
	}
	// Deletions first, so that a file may replace a directory the branch
	// emptied, and the other way round.
	slices.SortFunc(paths, func(a, b string) int {
		if da, db := theirs[a] == nil, theirs[b] == nil; da != db {
			if da {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, p := range paths {
		if err := m.ctx.Err(); err != nil {
			return err
		}
		if err := m.path(name, p, m.ours[p], m.base[p], theirs[p]); err != nil {
			return err
		}
	}
	return nil
}

func (m *merger) path(name, p string, o, b, t *version) error {
	by := m.changedBy[p]
	switch {
	case sameVersion(o, b):
		// Only the branch changed it.
		if t != nil {
			if others := m.collides(p); len(others) > 0 {
				return m.conflict(name, p, o, t, others)
			}
		}
		if err := m.set(p, t, nil); err != nil {
			return err
		}
	case sameVersion(o, t):
		// Both made the same change.
	case o == nil || t == nil || o.mode == filemode.Symlink || t.mode == filemode.Symlink || (b != nil && b.mode == filemode.Symlink):
		return m.conflict(name, p, o, t, by)
	default:
		// None is a link here: side is each one's content (b's, nil when
		// absent).
		c, err := m.sides(o, t, b)
		if err != nil {
			return err
		}
		oc, tc, bc := c[0], c[1], c[2]
		if isBinary(oc) || isBinary(tc) || isBinary(bc) {
			return m.conflict(name, p, o, t, by)
		}
		out, n, err := m.mergeFile(p, name, oc, bc, tc)
		if err != nil {
			return err
		}
		mode := o.mode
		if b != nil && o.mode == b.mode {
			mode = t.mode
		}
		if err := m.set(p, &version{mode: mode, hash: plumbing.ComputeHash(plumbing.BlobObject, out), content: out}, out); err != nil {
			return err
		}
		if n > 0 {
			m.record(name, p, oc, tc, by)
		}
	}
	if !slices.Contains(m.changedBy[p], name) {
		m.changedBy[p] = append(m.changedBy[p], name)
	}
	return nil
}

// collides returns the branches behind what stands in the way of a file
// at p in ours: a file or link at one of its directories, or files under
// p. Nil when nothing does.
func (m *merger) collides(p string) []string {
	var by []string
	hit := false
	for d := dirOf(p); d != ""; d = dirOf(d) {
		if m.ours[d] != nil {
			hit = true
			by = append(by, m.changedBy[d]...)
		}
	}
	if m.dirs[p] > 0 {
		hit = true
		for q := range m.ours {
			if strings.HasPrefix(q, p+"/") {
				by = append(by, m.changedBy[q]...)
			}
		}
	}
	if !hit {
		return nil
	}
	slices.Sort(by)
	by = slices.Compact(by)
	if by == nil {
		by = []string{}
	}
	return by
}

// conflict records a conflict that keeps ours in the directory.
func (m *merger) conflict(name, p string, o, t *version, by []string) error {
	c, err := m.sides(o, t)
	if err != nil {
		return err
	}
	m.record(name, p, c[0], c[1], by)
	return nil
}

func (m *merger) record(name, p string, oc, tc []byte, by []string) {
	branches := append(slices.Clone(by), name)
	slices.Sort(branches[:len(branches)-1])
	branches = slices.Compact(branches)
	m.conflicts = append(m.conflicts, Conflict{Path: p, Branches: branches, Ours: cut(oc), Theirs: cut(tc)})
}

func cut(b []byte) string {
	if len(b) > conflictCut {
		b = b[:conflictCut]
	}
	return string(b)
}

// side is a version's content for a Conflict: a link's target, "" when
// absent.
func (m *merger) side(v *version) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if v.mode == filemode.Symlink {
		return []byte(v.link), nil
	}
	return m.content(v)
}

// sides is side of each version, in order.
func (m *merger) sides(vs ...*version) ([][]byte, error) {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		c, err := m.side(v)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

func (m *merger) content(v *version) ([]byte, error) {
	if v.content != nil {
		return v.content, nil
	}
	return m.w.store.readAs(v.hash, plumbing.BlobObject)
}

// set makes p hold v in ours and in the directory (nil: removed), written
// through the root as a restore writes.
func (m *merger) set(p string, v *version, content []byte) error {
	if old := m.ours[p]; old != nil {
		m.countDirs(p, -1)
	}
	if v == nil {
		delete(m.ours, p)
		if err := m.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("workspace: merge: remove %s: %w", p, err)
		}
		return nil
	}
	m.ours[p] = v
	m.countDirs(p, 1)
	if v.mode == filemode.Symlink {
		if err := makeParents(m.root, p, m.made); err != nil {
			return err
		}
		if err := removeAny(m.root, p); err != nil {
			return err
		}
		if err := m.root.Symlink(v.link, p); err != nil {
			return fmt.Errorf("workspace: merge: link %s: %w", p, err)
		}
		return nil
	}
	if content == nil {
		var err error
		if content, err = m.content(v); err != nil {
			return err
		}
	}
	_, err := writeContent(m.root, target{path: p, mode: v.mode, hash: v.hash, size: int64(len(content))}, content, m.made)
	return err
}

// binary is git's test: a NUL in the first 8000 bytes.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

// mergeFile runs `git merge-file -p` on ours, base and theirs and returns
// the merged content and the number of conflicts in it.
func (m *merger) mergeFile(p, name string, ours, base, theirs []byte) ([]byte, int, error) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, 0, fmt.Errorf("workspace: merging %s needs the git binary: %w", p, err)
	}
	if m.tmp == "" {
		if m.tmp, err = os.MkdirTemp("", "tether-merge-*"); err != nil {
			return nil, 0, err
		}
		if err := os.Mkdir(filepath.Join(m.tmp, "home"), 0o700); err != nil {
			return nil, 0, err
		}
	}
	files := make([]string, 3)
	for i, c := range [][]byte{ours, base, theirs} {
		files[i] = filepath.Join(m.tmp, fmt.Sprintf("side%d", i))
		if err := os.WriteFile(files[i], c, 0o600); err != nil {
			return nil, 0, err
		}
	}
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(m.ctx, gitBin, "merge-file", "-p", "-L", "ours", "-L", "base", "-L", mergeLabel(name), files[0], files[1], files[2])
	cmd.Dir = m.tmp
	cmd.Env = mergeEnv(m.tmp)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	if err == nil {
		return out.Bytes(), 0, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && m.ctx.Err() == nil {
		if code := ee.ExitCode(); code >= 1 && code <= 127 {
			return out.Bytes(), code, nil
		}
	}
	msg := stderr.String()
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	return nil, 0, fmt.Errorf("workspace: git merge-file %s: %w: %s", p, err, strings.TrimSpace(msg))
}

// mergeLabel is a branch name fit for a conflict marker: one line of
// printable characters.
func mergeLabel(name string) string {
	l := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, name)
	if l == "" {
		l = "branch"
	}
	return l
}

// mergeEnv is the whole environment of git merge-file, run in dir: nothing
// of the worker's (which holds its secrets), no user or system config, no
// prompt, and no repository above dir.
func mergeEnv(dir string) []string {
	home := filepath.Join(dir, "home")
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir),
		"LC_ALL=C",
	}
}

package packer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/tether-run/tether/internal/treepolicy"
)

// committer moves a fully extracted session from the staging directory into
// the live root. It checks every part before it changes anything, then
// journals each change it makes; if a later step fails (something appeared
// at a session path meanwhile, the context ended, an I/O error) it undoes
// the journal in reverse, so a refused unpack leaves the live root as it
// was.
type committer struct {
	root     *os.Root
	rootAbs  string
	stageAbs string
	trash    int
	undo     []func() error
	touched  map[string]bool // live folders whose entries changed
}

// commit renames the archive's parts into place and removes live parts of
// the same session the archive does not hold: first the secondary parts,
// then the main file, so HasSession turns true only once the rest is there.
func (c *committer) commit(ctx context.Context, p *Packer, id string, parts map[string]Place) (err error) {
	cands, err := p.layout.Live(c.root, p.env, id)
	if err != nil {
		return err
	}
	var incoming, stale []Place
	for _, pl := range parts {
		incoming = append(incoming, pl)
	}
	sort.Slice(incoming, func(i, j int) bool { return incoming[i].Path < incoming[j].Path })
	for _, pl := range incoming {
		if err := c.check(pl); err != nil {
			return err
		}
	}
	for _, pl := range cands {
		if _, ok := parts[pl.Path]; ok {
			continue
		}
		present, err := c.checkStale(pl)
		if err != nil {
			return err
		}
		if present {
			stale = append(stale, pl)
		}
	}

	c.touched = map[string]bool{}
	defer func() {
		if err != nil {
			if uerr := c.rollback(); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}
		if serr := c.syncTouched(); serr != nil && err == nil {
			err = serr
		}
	}()
	// Each pass places the incoming parts, then removes the stale ones.
	for _, primary := range []bool{false, true} {
		if err := each(ctx, incoming, primary, c.place); err != nil {
			return err
		}
		if err := each(ctx, stale, primary, c.remove); err != nil {
			return err
		}
		// The secondary parts are durable before the main file appears.
		if err := c.syncTouched(); err != nil {
			return err
		}
	}
	return nil
}

// each does do to the parts whose Primary is primary, in order, and stops
// at the first error or when ctx ends.
func each(ctx context.Context, parts []Place, primary bool, do func(Place) error) error {
	for _, pl := range parts {
		if pl.Primary != primary {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := do(pl); err != nil {
			return err
		}
	}
	return nil
}

// check refuses a part whose live path, or a folder on the way to it,
// holds something the session cannot replace: a link, a special file, a
// file where a folder goes or the reverse.
func (c *committer) check(pl Place) error {
	parts := strings.Split(pl.Path, "/")
	for i := 1; i < len(parts); i++ {
		dir := path.Join(parts[:i]...)
		fi, err := c.root.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // the rest of the way is created
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%w: %s is a %s, not a directory, on the way to %s; it was left untouched", ErrExists, dir, treepolicy.Kind(fi.Mode()), pl.Path)
		}
	}
	fi, err := c.root.Lstat(pl.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return replaceable(pl, fi)
}

// replaceable accepts a live file for a file part and a live folder for a
// folder part.
func replaceable(pl Place, fi fs.FileInfo) error {
	if pl.Dir && fi.IsDir() || !pl.Dir && fi.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%w: %s holds a %s where the session needs a %s; it was left untouched, remove it to restore the session", ErrExists, pl.Path, treepolicy.Kind(fi.Mode()), treepolicy.Kind(placeMode(pl)))
}

// checkStale reports whether a live part the archive does not hold is
// there to be removed, and refuses one that is not a plain file or folder.
func (c *committer) checkStale(pl Place) (bool, error) {
	fi, err := lstatInRoot(c.root, pl.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if errors.Is(err, ErrLinkEntry) {
		return false, fmt.Errorf("%w: %v; it was left untouched", ErrExists, err)
	}
	if err != nil {
		return false, err
	}
	if err := checkType(pl, fi); err != nil {
		return false, fmt.Errorf("%w: stale %s cannot be removed: %v", ErrExists, pl.Path, err)
	}
	return true, nil
}

// place renames the staged part over its live path: into an empty spot
// without replacing anything that appears meanwhile, or, over the live
// file or folder, by an atomic exchange that leaves the old one in the
// staging directory (so the change can be undone).
func (c *committer) place(pl Place) error {
	if err := c.mkParents(pl.Path); err != nil {
		return err
	}
	src := c.staged(pl.Path)
	dst := c.live(pl.Path)
	fi, err := c.root.Lstat(pl.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := renameNoReplace(src, dst); errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s appeared while unpacking; retry", ErrExists, pl.Path)
		} else if err != nil {
			return err
		}
		c.journal(pl.Path, func() error { return renameNoReplace(dst, src) })
	case err != nil:
		return err
	default:
		if err := replaceable(pl, fi); err != nil {
			return err
		}
		if err := exchange(src, dst); err != nil {
			return err
		}
		c.journal(pl.Path, func() error { return exchange(src, dst) })
	}
	return nil
}

// remove moves a stale part of the session into the staging directory,
// which is deleted when the unpack ends.
func (c *committer) remove(pl Place) error {
	if _, err := c.checkStale(pl); err != nil {
		return err
	}
	c.trash++
	live, trash := c.live(pl.Path), filepath.Join(c.stageAbs, ".stale-"+strconv.Itoa(c.trash))
	if err := os.Rename(live, trash); err != nil {
		return err
	}
	c.journal(pl.Path, func() error { return renameNoReplace(trash, live) })
	return nil
}

// mkParents creates the directories on the way to rel in the live root, and
// refuses a link or a non-directory on the way.
func (c *committer) mkParents(rel string) error {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		dir := path.Join(parts[:i]...)
		fi, err := c.root.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			err = c.root.Mkdir(dir, dirMode)
			if err == nil {
				c.journal(dir, func() error { return c.rmdir(dir) })
			} else if !errors.Is(err, fs.ErrExist) {
				return err
			}
			fi, err = c.root.Lstat(dir)
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%w: %s is a %s, not a directory, on the way to %s; it was left untouched", ErrExists, dir, treepolicy.Kind(fi.Mode()), rel)
		}
	}
	return nil
}

// rmdir removes a folder mkParents made, unless someone else filled it
// meanwhile: that is theirs.
func (c *committer) rmdir(dir string) error {
	err := c.root.Remove(dir)
	if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		return nil
	}
	return err
}

// journal records the undo of a change to the entry rel.
func (c *committer) journal(rel string, undo func() error) {
	c.undo = append(c.undo, undo)
	c.touched[path.Dir(rel)] = true
}

// rollback undoes the journal, newest first. A folder it created that
// someone else filled meanwhile is left in place.
func (c *committer) rollback() error {
	var errs []error
	for i := len(c.undo) - 1; i >= 0; i-- {
		if err := c.undo[i](); err != nil {
			errs = append(errs, err)
		}
	}
	c.undo = nil
	if len(errs) > 0 {
		return fmt.Errorf("packer: undoing a partial unpack failed, the live root may hold part of the session: %w", errors.Join(errs...))
	}
	return nil
}

// syncTouched fsyncs every live folder whose entries changed, so the
// renames and new folders survive a crash.
func (c *committer) syncTouched() error {
	dirs := make([]string, 0, len(c.touched))
	for d := range c.touched {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if err := syncDir(c.root, d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		delete(c.touched, d)
	}
	return nil
}

func (c *committer) staged(rel string) string {
	return filepath.Join(c.stageAbs, filepath.FromSlash(rel))
}

func (c *committer) live(rel string) string {
	return filepath.Join(c.rootAbs, filepath.FromSlash(rel))
}

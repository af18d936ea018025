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
)

// committer moves a fully extracted session from the staging directory into
// the live root.
type committer struct {
	root     *os.Root
	rootAbs  string
	stageAbs string
	synced   map[string]bool
	trash    int
}

// commit renames the archive's parts into place and removes live parts of
// the same session the archive does not hold: first the secondary parts,
// then the main file, so HasSession turns true only once the rest is there.
func (c *committer) commit(ctx context.Context, p *Packer, id string, parts map[string]Place) error {
	cands, err := p.layout.live(c.root, p.env, id)
	if err != nil {
		return err
	}
	var stale []Place
	for _, pl := range cands {
		if _, ok := parts[pl.Path]; !ok {
			stale = append(stale, pl)
		}
	}
	var incoming []Place
	for _, pl := range parts {
		incoming = append(incoming, pl)
	}
	sort.Slice(incoming, func(i, j int) bool { return incoming[i].Path < incoming[j].Path })
	c.synced = map[string]bool{}
	for _, primary := range []bool{false, true} {
		for _, pl := range incoming {
			if pl.Primary != primary {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := c.place(pl); err != nil {
				return err
			}
		}
		for _, pl := range stale {
			if pl.Primary != primary {
				continue
			}
			if err := c.remove(pl); err != nil {
				return err
			}
		}
	}
	return nil
}

// place renames the staged part over its live path: into an empty spot
// without replacing anything that appears meanwhile, over a file by an
// atomic rename, over a directory by an atomic exchange.
func (c *committer) place(pl Place) error {
	if err := c.mkParents(pl.Path); err != nil {
		return err
	}
	src := c.staged(pl.Path)
	dst := c.live(pl.Path)
	fi, err := c.root.Lstat(pl.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		err = renameNoReplace(src, dst)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s appeared while unpacking; retry", ErrExists, pl.Path)
		}
	case err != nil:
		return err
	case !pl.Dir && fi.Mode().IsRegular():
		err = os.Rename(src, dst)
	case pl.Dir && fi.IsDir():
		err = exchange(src, dst)
	default:
		return fmt.Errorf("%w: %s holds a %s where the session needs a %s; it was left untouched, remove it to restore the session", ErrExists, pl.Path, kind(fi.Mode()), kind(placeMode(pl)))
	}
	if err != nil {
		return err
	}
	return c.syncParents(pl.Path)
}

// remove moves a stale part of the session into the staging directory,
// which is deleted when the unpack ends.
func (c *committer) remove(pl Place) error {
	fi, err := lstatInRoot(c.root, pl.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if errors.Is(err, ErrLinkEntry) {
		return fmt.Errorf("%w: %v; it was left untouched", ErrExists, err)
	}
	if err != nil {
		return err
	}
	if err := checkType(pl, fi); err != nil {
		return fmt.Errorf("%w: stale %s cannot be removed: %v", ErrExists, pl.Path, err)
	}
	c.trash++
	if err := os.Rename(c.live(pl.Path), filepath.Join(c.stageAbs, ".stale-"+strconv.Itoa(c.trash))); err != nil {
		return err
	}
	return c.syncParents(pl.Path)
}

// mkParents creates the directories on the way to rel in the live root, and
// refuses a link or a non-directory on the way.
func (c *committer) mkParents(rel string) error {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		dir := path.Join(parts[:i]...)
		fi, err := c.root.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			if err := c.root.Mkdir(dir, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			fi, err = c.root.Lstat(dir)
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%w: %s is a %s, not a directory, on the way to %s; it was left untouched", ErrExists, dir, kind(fi.Mode()), rel)
		}
	}
	return nil
}

// syncParents fsyncs every directory from rel's parent up to the root, so
// the new entries (and any directories mkParents made) survive a crash.
func (c *committer) syncParents(rel string) error {
	for dir := path.Dir(rel); ; dir = path.Dir(dir) {
		if !c.synced[dir] {
			if err := syncDir(c.root, dir); err != nil {
				return err
			}
			c.synced[dir] = true
		}
		if dir == "." {
			return nil
		}
	}
}

func (c *committer) staged(rel string) string {
	return filepath.Join(c.stageAbs, filepath.FromSlash(rel))
}

func (c *committer) live(rel string) string {
	return filepath.Join(c.rootAbs, filepath.FromSlash(rel))
}

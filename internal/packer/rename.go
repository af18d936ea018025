package packer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// renameNoReplaceFallback is renameNoReplace for file systems without
// renameat2: a check then a rename, racy only against local processes
// writing the same session path.
func renameNoReplaceFallback(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return &os.LinkError{Op: "rename", Old: src, New: dst, Err: fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(src, dst)
}

// exchangeFallback replaces directory dst with src in two renames; dst is
// briefly absent. The old dst ends up beside src, inside the staging
// directory.
func exchangeFallback(src, dst string) error {
	old := src + ".old"
	if err := os.Rename(dst, old); err != nil {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		if rerr := os.Rename(old, dst); rerr != nil {
			return fmt.Errorf("%w (and restoring %s failed: %v)", err, dst, rerr)
		}
		return err
	}
	return nil
}

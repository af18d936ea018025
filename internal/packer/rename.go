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

// exchangeFallback swaps src and dst in three renames through a temporary
// name beside src; dst is briefly absent. Like the atomic exchange, it
// leaves the old dst at src, so a second exchange undoes the first.
func exchangeFallback(src, dst string) error {
	tmp := src + ".exchange"
	if err := os.Rename(dst, tmp); err != nil {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		if rerr := os.Rename(tmp, dst); rerr != nil {
			return fmt.Errorf("%w (and restoring %s failed: %v)", err, dst, rerr)
		}
		return err
	}
	return os.Rename(tmp, src)
}

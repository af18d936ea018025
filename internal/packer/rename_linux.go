//go:build linux

package packer

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames src to dst and fails with an fs.ErrExist error if
// dst exists, atomically (renameat2 RENAME_NOREPLACE).
func renameNoReplace(src, dst string) error {
	err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return renameNoReplaceFallback(src, dst)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: src, New: dst, Err: err}
	}
	return nil
}

// exchange swaps src and dst atomically (renameat2 RENAME_EXCHANGE): dst
// never disappears, and its old contents end up at src.
func exchange(src, dst string) error {
	err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return exchangeFallback(src, dst)
	}
	if err != nil {
		return &os.LinkError{Op: "exchange", Old: src, New: dst, Err: err}
	}
	return nil
}

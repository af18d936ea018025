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
	return renameat2(src, dst, unix.RENAME_NOREPLACE, "rename", renameNoReplaceFallback)
}

// exchange swaps src and dst atomically (renameat2 RENAME_EXCHANGE): dst
// never disappears, and its old contents end up at src.
func exchange(src, dst string) error {
	return renameat2(src, dst, unix.RENAME_EXCHANGE, "exchange", exchangeFallback)
}

// renameat2 is renameat2(2) with flags, its error an *os.LinkError naming
// op, or fallback where the file system or kernel does not know the flags.
func renameat2(src, dst string, flags uint, op string, fallback func(src, dst string) error) error {
	err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, flags)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return fallback(src, dst)
	}
	if err != nil {
		return &os.LinkError{Op: op, Old: src, New: dst, Err: err}
	}
	return nil
}

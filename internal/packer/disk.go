package packer

import (
	"io/fs"
	"os"
)

// disk holds the file-system calls of an unpack whose failure only a failing
// disk produces: an fsync, a close after a write, a folder made in the
// staging directory, the removal of a staging directory. Production uses the
// os package's; the package's tests swap one for a fault (or a counter) to
// prove that each failure is reported and never lost, which no test on a
// healthy disk can.
var disk = struct {
	sync      func(*os.File) error
	close     func(*os.File) error
	mkdirAll  func(root *os.Root, name string, perm fs.FileMode) error
	removeAll func(path string) error
	removeIn  func(root *os.Root, name string) error
}{
	sync:      (*os.File).Sync,
	close:     (*os.File).Close,
	mkdirAll:  (*os.Root).MkdirAll,
	removeAll: os.RemoveAll,
	removeIn:  (*os.Root).RemoveAll,
}

// Package untrusted opens files the worker reads from where an agent
// could have written: the ask_user record in a visit's scratch directory,
// and every file under a CLI's state root or working directory (session
// and rollout files, exports, records). An agent that runs a shell can
// replace such a file with a link to the worker's secrets or to
// /dev/zero, with a FIFO that blocks whoever opens it, or with a file of
// gigabytes; what the worker opens here is none of those.
//
// A file is opened below a directory the worker made (an os.Root, so no
// path or link climbs out of it), never through a link at its last step
// (O_NOFOLLOW), without blocking (O_NONBLOCK), and must then be a regular
// file; it is read up to a cap. Any violation is an error wrapping
// agent.ErrUnsafeFile, which fails the visit (ErrorType "UnsafeFile"),
// never the worker.
package untrusted

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/treepolicy"
)

// File is an open regular file an agent could have written.
type File struct {
	*os.File
	// Size is the file's size when it was opened.
	Size int64
	name string
}

// Open opens rel (a path below dir, slash- or OS-separated) for reading.
// A file that does not exist is fs.ErrNotExist, as os.Open says it; a
// link, a FIFO, a device, a socket or a directory, or a path that leaves
// dir, is agent.ErrUnsafeFile.
func Open(dir, rel string) (*File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	name := filepath.Join(dir, rel)
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return nil, err
	case errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("%w: %s is a symbolic link", agent.ErrUnsafeFile, name)
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %v", agent.ErrUnsafeFile, name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is a %s, not a regular file", agent.ErrUnsafeFile, name, treepolicy.Kind(fi.Mode()))
	}
	return &File{File: f, Size: fi.Size(), name: name}, nil
}

// Limit reads at most max bytes of f: a file that turns out longer (it
// was over max, or grew past it) fails the read with agent.ErrUnsafeFile.
func (f *File) Limit(max int64) io.Reader { return &capped{f: f, left: max, max: max} }

type capped struct {
	f         *File
	left, max int64
}

func (c *capped) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.f.Read(p)
	if int64(n) > c.left {
		return 0, fmt.Errorf("%w: %s is over %d bytes", agent.ErrUnsafeFile, c.f.name, c.max)
	}
	c.left -= int64(n)
	return n, err
}

// ReadFile reads the regular file rel below dir, at most max bytes.
func ReadFile(dir, rel string, max int64) ([]byte, error) {
	f, err := Open(dir, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Size > max {
		return nil, fmt.Errorf("%w: %s is %d bytes, over its %d-byte cap", agent.ErrUnsafeFile, f.name, f.Size, max)
	}
	return io.ReadAll(f.Limit(max))
}

// Rel is path relative to dir, for Open: the path of a file that a
// lookup below dir returned.
func Rel(dir, path string) (string, error) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: %s is not below %s", agent.ErrUnsafeFile, path, dir)
	}
	return rel, nil
}

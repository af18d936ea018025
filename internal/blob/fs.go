package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// fsStore keeps each blob as a file under a root directory, the key's
// segments becoming directories. All access goes through an os.Root, so no
// key, symlink or race can reach outside the root.
type fsStore struct {
	dir    string
	root   *os.Root
	rootFI os.FileInfo // identity of the root when opened
}

// tmpPrefix names in-flight writes; keys cannot start a segment with '.',
// so a temporary file never collides with a key and List skips it.
const tmpPrefix = ".tmp-"

// OpenFS opens (creating it 0700 if needed) a filesystem Store rooted at dir.
func OpenFS(dir string) (Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("blob: open filesystem store: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("blob: open filesystem store: %w", err)
	}
	fi, err := root.Stat(".")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("blob: open filesystem store: %w", err)
	}
	return &fsStore{dir: dir, root: root, rootFI: fi}, nil
}

// absent turns an ENOENT into ErrNotFound, unless the root directory
// itself has gone (removed, replaced, or its volume unmounted): that is a
// fault of the store, not the absence of one blob.
func (s *fsStore) absent(key string, err error) error {
	if herr := s.rootHealth(); herr != nil {
		return fmt.Errorf("%w (%v)", herr, err)
	}
	return fmt.Errorf("%w: %q", ErrNotFound, key)
}

func (s *fsStore) rootHealth() error {
	fi, err := os.Stat(s.dir)
	if err != nil {
		return fmt.Errorf("the store's root %s is gone: %v", s.dir, err)
	}
	if !os.SameFile(fi, s.rootFI) {
		return fmt.Errorf("the store's root %s was replaced since the store was opened", s.dir)
	}
	return nil
}

// fail classifies an error from a read-side operation.
func (s *fsStore) fail(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		if err = s.absent(key, err); errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return fmt.Errorf("blob: %s %q: %w", op, key, err)
}

func (s *fsStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts ...PutOption) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	o := applyPut(opts)
	if err := s.put(ctx, key, r, size, o); err != nil {
		if errors.Is(err, ErrExists) || errors.Is(err, ErrInvalidKey) {
			return err
		}
		if errors.Is(err, fs.ErrNotExist) {
			if herr := s.rootHealth(); herr != nil {
				err = fmt.Errorf("%w (%v)", herr, err)
			}
		}
		return fmt.Errorf("blob: put %q: %w", key, err)
	}
	return nil
}

func (s *fsStore) put(ctx context.Context, key string, r io.Reader, size int64, o putOptions) (err error) {
	dir := path.Dir(key)
	var f *os.File
	var tmp string
	// A concurrent Delete may prune the directory between mkdirAll and
	// the create; that ENOENT is retried, not reported.
	for attempt := 0; ; attempt++ {
		if err := s.mkdirAll(dir); err != nil {
			return err
		}
		f, tmp, err = s.createTemp(dir)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt == 4 {
			return err
		}
	}
	committed := false
	defer func() {
		if f != nil {
			f.Close()
		}
		if !committed {
			s.root.Remove(tmp)
		}
	}()

	var h hash.Hash
	var w io.Writer = f
	if o.createOnly {
		h = sha256.New()
		w = io.MultiWriter(f, h)
	}
	n, err := io.Copy(w, putReader(ctx, key, r, size))
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return cerr
	}
	if err := ctx.Err(); err != nil {
		return err // never commit a cancelled write
	}

	// An empty directory at key is debris of a crash between a Delete
	// and its pruning; it is removed once and the commit retried.
	for retried := false; ; retried = true {
		var err error
		if o.createOnly {
			if err = s.root.Link(tmp, key); err == nil {
				s.root.Remove(tmp) // if this fails, List and keys never see the hidden name
				break
			}
		} else if err = s.root.Rename(tmp, key); err == nil {
			break
		}
		if !retried && s.rmdirEmpty(key) {
			continue
		}
		if o.createOnly && errors.Is(err, fs.ErrExist) {
			return s.sameContent(ctx, key, n, h.Sum(nil))
		}
		return s.nestingOr(key, err)
	}
	committed = true
	return s.syncDir(dir)
}

// sameContent resolves a create-only collision: identical bytes are a
// successful retry, anything else is ErrExists.
func (s *fsStore) sameContent(ctx context.Context, key string, n int64, sum []byte) error {
	f, err := s.openRead(key)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return nestedUnder(key)
	}
	if err := regular(key, fi); err != nil {
		return err
	}
	if fi.Size() != n {
		return fmt.Errorf("%w: %q holds different bytes", ErrExists, key)
	}
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return err
	}
	if !bytes.Equal(h.Sum(nil), sum) {
		return fmt.Errorf("%w: %q holds different bytes", ErrExists, key)
	}
	return nil
}

func nestedUnder(key string) error {
	return fmt.Errorf("other keys nest under %q (a directory holds them); keys must not nest", key)
}

// nestingOr explains a failed rename or link onto a key that is a
// directory, i.e. other keys nest under it.
func (s *fsStore) nestingOr(key string, err error) error {
	if fi, serr := s.root.Lstat(key); serr == nil && fi.IsDir() {
		return fmt.Errorf("%s: %w", nestedUnder(key), err)
	}
	return err
}

func (s *fsStore) createTemp(dir string) (*os.File, string, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, "", err
	}
	name := path.Join(dir, tmpPrefix+hex.EncodeToString(rnd[:]))
	f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	return f, name, err
}

// mkdirAll creates dir and its parents 0700, fsyncing each parent that
// gained an entry so the new directories survive a crash.
func (s *fsStore) mkdirAll(dir string) error {
	if dir == "." {
		return nil
	}
	if fi, err := s.root.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	parent := path.Dir(dir)
	if err := s.mkdirAll(parent); err != nil {
		return err
	}
	err := s.root.Mkdir(dir, 0o700)
	if err == nil {
		return s.syncDir(parent)
	}
	if errors.Is(err, fs.ErrExist) {
		fi, serr := s.root.Stat(dir)
		if serr != nil {
			return serr
		}
		if fi.IsDir() {
			return nil
		}
		return fmt.Errorf("%s is a file, so no key can nest under it: %w", dir, syscall.ENOTDIR)
	}
	return err
}

// openRead opens name for reading without blocking: a fifo or device
// someone put at a key must not hang the store (an open of a fifo waits
// for a writer). O_NONBLOCK changes nothing for a regular file or a
// directory, and every caller refuses anything else before reading.
func (s *fsStore) openRead(name string) (*os.File, error) {
	return s.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}

// openDir opens dir, which must be a directory, without blocking.
func (s *fsStore) openDir(dir string) (*os.File, error) {
	return s.root.OpenFile(dir, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY, 0)
}

func (s *fsStore) syncDir(dir string) error {
	d, err := s.openDir(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}

func (s *fsStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkCall(ctx, "get", key); err != nil {
		return nil, err
	}
	f, err := s.openRead(key)
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, s.fail("get", key, err)
	}
	if err := regular(key, fi); err != nil {
		f.Close()
		return nil, err
	}
	return ctxFile{ctx: ctx, File: f}, nil
}

// ctxFile is a blob being read: each Read first checks the context, so a
// reader of a huge blob stops when its caller gives up.
type ctxFile struct {
	ctx context.Context
	*os.File
}

func (c ctxFile) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.File.Read(p)
}

// WriteTo hides the file's own, which would read past the context checks.
func (c ctxFile) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}

// regular accepts a blob file. A directory at a key is not a blob (only
// other keys live under it), which is absence; anything else is a fault.
func regular(key string, fi os.FileInfo) error {
	switch {
	case fi.Mode().IsRegular():
		return nil
	case fi.IsDir():
		return fmt.Errorf("%w: %q", ErrNotFound, key)
	default:
		return fmt.Errorf("blob: %q is a %v, not a blob file", key, fi.Mode().Type())
	}
}

func (s *fsStore) Stat(ctx context.Context, key string) (Info, error) {
	if err := checkCall(ctx, "stat", key); err != nil {
		return Info{}, err
	}
	fi, err := s.root.Stat(key)
	if err != nil {
		return Info{}, s.fail("stat", key, err)
	}
	if err := regular(key, fi); err != nil {
		return Info{}, err
	}
	return Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

func (s *fsStore) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	out, err := s.list(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("blob: list %q: %w", prefix, err)
	}
	return out, nil
}

func (s *fsStore) list(ctx context.Context, prefix string) ([]Info, error) {
	dir := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dir = prefix[:i]
	}
	var out []Info
	err := fs.WalkDir(s.root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				if herr := s.rootHealth(); herr != nil {
					return fmt.Errorf("%w (%v)", herr, err)
				}
				return fs.SkipAll // no directory, no keys
			}
			return err
		}
		if p == dir {
			if !d.IsDir() {
				return fmt.Errorf("%s is a file, so no key can nest under it: %w", dir, syscall.ENOTDIR)
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") || !strings.HasPrefix(p, prefix) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while we walked
		}
		if err != nil {
			return err
		}
		out = append(out, Info{Key: p, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		// An empty answer must not come from a store that is gone.
		if herr := s.rootHealth(); herr != nil {
			return nil, herr
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (s *fsStore) Delete(ctx context.Context, key string) error {
	if err := checkCall(ctx, "delete", key); err != nil {
		return err
	}
	if _, err := s.remove(key); err != nil {
		return fmt.Errorf("blob: delete %q: %w", key, err)
	}
	return nil
}

// remove deletes the blob at key, reporting whether there was one. Only a
// genuine absence counts as "nothing to do".
func (s *fsStore) remove(key string) (bool, error) {
	fi, err := s.root.Lstat(key)
	if errors.Is(err, fs.ErrNotExist) {
		if herr := s.rootHealth(); herr != nil {
			return false, fmt.Errorf("%w (%v)", herr, err)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fi.IsDir() {
		return false, nil // not a blob: only other keys live there
	}
	if err := s.root.Remove(key); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	dir := path.Dir(key)
	if err := s.syncDir(dir); err != nil {
		return true, err
	}
	s.prune(dir)
	return true, nil
}

// prune removes now-empty directories above a deleted blob so that the
// directory's name can become a key again. rmdir refuses non-empty
// directories and never removes a file, so racing writers are safe: a Put
// that loses its directory retries.
func (s *fsStore) prune(dir string) {
	for dir != "." && s.rmdirEmpty(dir) {
		dir = path.Dir(dir)
	}
}

// rmdirEmpty removes dir if it is an empty directory. It never removes a
// file, which a plain Remove would if a racing Put had just put one there.
func (s *fsStore) rmdirEmpty(dir string) bool {
	p, err := s.openDir(path.Dir(dir))
	if err != nil {
		return false
	}
	defer p.Close()
	return unix.Unlinkat(int(p.Fd()), path.Base(dir), unix.AT_REMOVEDIR) == nil
}

func (s *fsStore) Close() error { return s.root.Close() }

package scripted

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

// packer moves exactly one session's log file between state roots. Its
// whitelist is a single path shape, sessions/<bucket>/<id>.jsonl, for the
// id asked for; nothing else under the state root is ever read or written.
type packer struct {
	root   string
	logger *slog.Logger
}

var _ backend.SessionPacker = (*packer)(nil)

const sessionsPrefix = "sessions/"

// PackSession implements backend.SessionPacker.
func (p *packer) PackSession(_ context.Context, id string) ([]byte, error) {
	dir := SessionsDir(p.root)
	rel, err := jsonl.Locate(dir, id)
	if errors.Is(err, sessionlog.ErrNotFound) || errors.Is(err, sessionlog.ErrInvalid) {
		return nil, fmt.Errorf("scripted: pack: %w %s under %s", backend.ErrNoSession, id, p.root)
	}
	if err != nil {
		return nil, fmt.Errorf("scripted: pack %s: %w", id, err)
	}
	data, err := readRegular(filepath.Join(dir, rel))
	if err != nil {
		return nil, fmt.Errorf("scripted: pack %s: %w", id, err)
	}
	if _, err := checkLog(data, id, path.Dir(filepath.ToSlash(rel))); err != nil {
		return nil, fmt.Errorf("scripted: pack %s: %w", id, err)
	}
	return encodeArchive(backend.Scripted, id, []archiveFile{{Path: sessionsPrefix + filepath.ToSlash(rel), Data: data}})
}

func readRegular(name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxFileSize {
		return nil, fmt.Errorf("%s is not a regular file under %d bytes", name, maxFileSize)
	}
	return io.ReadAll(f)
}

// checkLog verifies that data is the log of session id, of this backend,
// and belongs in bucket.
func checkLog(data []byte, id, bucket string) (sessionlog.Header, error) {
	line, _, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return sessionlog.Header{}, fmt.Errorf("%w: session file has no header line", sessionlog.ErrCorrupt)
	}
	h, err := sessionlog.DecodeHeader(line)
	if err != nil {
		return h, fmt.Errorf("%w: session file header: %v", sessionlog.ErrCorrupt, err)
	}
	switch {
	case h.ID != id:
		return h, fmt.Errorf("session file is for session %q, not %q", h.ID, id)
	case h.Backend != backend.Scripted:
		return h, fmt.Errorf("session file belongs to backend %q", h.Backend)
	case jsonl.Bucket(h.Cwd) != bucket:
		return h, fmt.Errorf("session file sits in bucket %q but its cwd belongs in %q", bucket, jsonl.Bucket(h.Cwd))
	}
	return h, nil
}

// UnpackSession implements backend.SessionPacker: the archive must hold
// exactly the log of id; it is written through an exclusive temp file and
// renamed into place, never truncating a file in place. A copy of the same
// id in another bucket is stale and removed afterwards.
func (p *packer) UnpackSession(_ context.Context, id string, blob []byte) error {
	if err := sessionlog.ValidateID(id); err != nil {
		return fmt.Errorf("scripted: unpack: %w", err)
	}
	m, files, err := decodeArchive(blob)
	if err != nil {
		return fmt.Errorf("scripted: unpack %s: %w", id, err)
	}
	switch {
	case m.Backend != backend.Scripted:
		return fmt.Errorf("scripted: unpack %s: archive is for backend %q", id, m.Backend)
	case m.SessionID != id:
		return fmt.Errorf("scripted: unpack %s: archive is for session %q", id, m.SessionID)
	case len(files) != 1:
		return fmt.Errorf("scripted: unpack %s: archive holds %d files, a scripted session is one", id, len(files))
	}
	f := files[0]
	bucket, name, ok := strings.Cut(strings.TrimPrefix(f.Path, sessionsPrefix), "/")
	if !strings.HasPrefix(f.Path, sessionsPrefix) || !ok || !jsonl.ValidBucket(bucket) || name != id+jsonl.Ext {
		return fmt.Errorf("scripted: unpack %s: %q is not a scripted session file of that id", id, f.Path)
	}
	if _, err := checkLog(f.Data, id, bucket); err != nil {
		return fmt.Errorf("scripted: unpack %s: %w", id, err)
	}
	sessions := SessionsDir(p.root)
	dir := filepath.Join(sessions, bucket)
	if err := mkdirNoLinks(p.root, sessions, dir); err != nil {
		return fmt.Errorf("scripted: unpack %s: %w", id, err)
	}
	if err := writeAtomic(dir, name, f.Data); err != nil {
		return fmt.Errorf("scripted: unpack %s: %w", id, err)
	}
	return removeStale(sessions, bucket, id)
}

// mkdirNoLinks creates each directory below root in turn (0700) and
// refuses any that already exists as something other than a directory,
// symlinks included, so extraction cannot be redirected.
func mkdirNoLinks(root string, dirs ...string) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	for _, d := range dirs {
		err := os.Mkdir(d, 0o700)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		fi, err := os.Lstat(d)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory (a symlink or file is refused)", d)
		}
	}
	return nil
}

func writeAtomic(dir, name string, data []byte) error {
	tmp, err := jsonl.CreateTemp(dir, "."+name+".unpack-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := tmp.Write(data)
	if err == nil && n != len(data) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	final := filepath.Join(dir, name)
	if fi, err := os.Lstat(final); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file", final)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return err
	}
	return jsonl.SyncDir(dir)
}

func removeStale(sessions, keep, id string) error {
	entries, err := os.ReadDir(sessions)
	if err != nil {
		return fmt.Errorf("scripted: unpack %s: %w", id, err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == keep {
			continue
		}
		stale := filepath.Join(sessions, e.Name(), id+jsonl.Ext)
		if err := os.Remove(stale); err != nil && !sessionlog.IsAbsent(err) {
			return fmt.Errorf("scripted: unpack %s: remove stale copy: %w", id, err)
		}
	}
	return nil
}

// HasSession implements backend.SessionPacker. The interface has no error
// result: a lookup fault (not a genuine absence) is logged and reported as
// false, which makes the runtime start fresh rather than resume blindly.
func (p *packer) HasSession(ctx context.Context, id string) bool {
	st, err := jsonl.NewStore(SessionsDir(p.root)).LoadStored(ctx, id, sessionlog.HeaderOnly)
	switch {
	case err == nil:
		return st.Header.Backend == backend.Scripted
	case errors.Is(err, sessionlog.ErrNotFound), errors.Is(err, sessionlog.ErrInvalid):
		return false
	default:
		p.logger.Warn("scripted: cannot tell whether a session exists; treating it as absent",
			"session_id", id, "state_root", p.root, "err", err)
		return false
	}
}

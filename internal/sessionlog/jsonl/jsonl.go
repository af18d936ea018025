// Package jsonl is the sessionlog backend that keeps one append-only JSON
// Lines file per session, so a session can be copied, archived or inspected
// file by file.
//
// Layout under the store's root:
//
//	<root>/<bucket>/<id>.jsonl
//
// where <bucket> is Bucket(cwd) ("_no-cwd" for a session without a cwd).
// Line 1 is the header, every further line one event, each a compact JSON
// object ending in '\n'. A log is created whole (header and first batch) in
// an exclusively opened 0600 temp file that is linked into place, so it
// never exists half-written; later batches are appended with one write and
// an fsync. A final fragment without its '\n' was never fully written: it is
// the torn tail, marked by its byte offset and discarded on repair. A
// complete line that does not decode is corruption, reported and kept.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tether-run/tether/internal/sessionlog"
)

// maxHeader bounds the header line a header-only read accepts (a cwd may
// be up to PATH_MAX, 4096 bytes, before JSON escaping).
const maxHeader = 64 << 10

// Store implements sessionlog.Storage on a directory.
type Store struct {
	root string
	// before, when set (by tests only), runs before every operation that
	// changes the store's files or makes them durable, named by op; an
	// error fails the operation before it runs. Tests fail, block or crash
	// a write at an exact point with it.
	before sessionlog.Hook
}

var _ sessionlog.Storage = (*Store)(nil)

// NewStore returns the storage hooks over root. Nothing is created until
// the first session is.
func NewStore(root string) *Store { return &Store{root: root} }

// Open returns a session log kept under root.
func Open(root string) *sessionlog.Coordinator {
	return sessionlog.NewCoordinator(NewStore(root))
}

// Root is the directory the store keeps its buckets in.
func (s *Store) Root() string { return s.root }

// notFound wraps err, which must be ENOENT, as a genuine absence.
func notFound(what string, err error) error {
	return fmt.Errorf("jsonl: %s: %w (%v)", what, sessionlog.ErrNotFound, err)
}

// LoadLive implements sessionlog.Storage: only cwd's bucket is consulted.
func (s *Store) LoadLive(_ context.Context, id, cwd string, depth sessionlog.Depth) (*sessionlog.Stored, error) {
	rel := RelPath(cwd, id)
	return readLog(s.root, rel, id, depth)
}

// LoadStored implements sessionlog.Storage: every bucket is consulted.
func (s *Store) LoadStored(_ context.Context, id string, depth sessionlog.Depth) (*sessionlog.Stored, error) {
	rel, err := Locate(s.root, id)
	if err != nil {
		return nil, err
	}
	return readLog(s.root, rel, id, depth)
}

// Locate finds the log of id in any bucket under root and returns its path
// relative to root. The error wraps sessionlog.ErrNotFound only when no
// bucket holds it; a log found in two buckets is an error too.
func Locate(root, id string) (string, error) {
	if err := sessionlog.ValidateID(id); err != nil {
		return "", err
	}
	buckets, err := readBuckets(root)
	if err != nil {
		return "", err
	}
	var found []string
	for _, b := range buckets {
		rel := filepath.Join(b, id+Ext)
		fi, err := os.Lstat(filepath.Join(root, rel))
		switch {
		case err == nil && !fi.Mode().IsRegular():
			return "", fmt.Errorf("jsonl: %s is not a regular file", filepath.Join(root, rel))
		case err == nil:
			found = append(found, rel)
		case !sessionlog.IsAbsent(err):
			return "", fmt.Errorf("jsonl: look for session %s: %w", id, err)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("jsonl: session %s under %s: %w", id, root, sessionlog.ErrNotFound)
	case 1:
		return found[0], nil
	default:
		return "", fmt.Errorf("jsonl: session %s is stored in more than one bucket (%s); remove the stale copy", id, strings.Join(found, ", "))
	}
}

// readBuckets lists the bucket directories under root; a missing root has
// none, any other failure is returned.
func readBuckets(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		if sessionlog.IsAbsent(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("jsonl: read %s: %w", root, err)
	}
	var out []string
	for _, e := range entries {
		// Symlinks and stray files are not buckets; a bucket is a real
		// directory the store made.
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// readLog reads root/rel, the log of id.
func readLog(root, rel, id string, depth sessionlog.Depth) (*sessionlog.Stored, error) {
	path := filepath.Join(root, rel)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if sessionlog.IsAbsent(err) {
			return nil, notFound("session "+id, err)
		}
		return nil, fmt.Errorf("jsonl: open session %s: %w", id, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("jsonl: stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("jsonl: %s is not a regular file", path)
	}
	var (
		data []byte
		st   *sessionlog.Stored
	)
	switch depth {
	case sessionlog.HeaderOnly:
		data, err = headerLine(f)
	case sessionlog.LastTurn:
		st, err = readTail(f, fi.Size())
	default:
		data = make([]byte, 0, fi.Size()+1)
		data, err = readAll(f, data)
	}
	if err != nil && !errors.Is(err, sessionlog.ErrCorrupt) && !errors.Is(err, sessionlog.ErrVersion) {
		return nil, fmt.Errorf("jsonl: read %s: %w", path, err)
	}
	if st == nil && err == nil {
		st, err = parse(data, depth)
	}
	if err != nil {
		return nil, fmt.Errorf("jsonl: %s: %w", path, err)
	}
	if st.Header.ID != id {
		return nil, fmt.Errorf("%w: %s holds session %q", sessionlog.ErrCorrupt, path, st.Header.ID)
	}
	if b := filepath.Dir(rel); b != Bucket(st.Header.Cwd) {
		return nil, fmt.Errorf("%w: %s is in bucket %s but its cwd %q belongs in %s", sessionlog.ErrCorrupt, path, b, st.Header.Cwd, Bucket(st.Header.Cwd))
	}
	return st, nil
}

func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// parse splits a log into its header, its committed events and the offset
// of a torn final fragment. Its errors are ErrCorrupt or ErrVersion.
func parse(data []byte, depth sessionlog.Depth) (*sessionlog.Stored, error) {
	st, nl, err := parseHeader(data)
	if err != nil {
		return nil, err
	}
	if depth == sessionlog.HeaderOnly {
		return st, nil
	}
	if err := parseEvents(st, data[nl+1:], int64(nl+1), 2); err != nil {
		return nil, err
	}
	return st, nil
}

// headerLine reads a log's first line, up to maxHeader bytes; one without
// its newline is returned as it is, for parseHeader to report.
func headerLine(r io.Reader) ([]byte, error) {
	line, err := bufio.NewReaderSize(r, maxHeader).ReadSlice('\n')
	if errors.Is(err, io.EOF) || errors.Is(err, bufio.ErrBufferFull) {
		err = nil
	}
	return line, err
}

// parseHeader decodes the header line that starts data and returns it, with
// the index of the newline that ends it. The header comes first: a log of
// another format version is refused before any of its events is read.
func parseHeader(data []byte) (*sessionlog.Stored, int, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		// The header is written with the first batch in one created file,
		// so it cannot be torn: a log without a whole header line is damaged.
		return nil, 0, fmt.Errorf("%w: no complete header line", sessionlog.ErrCorrupt)
	}
	h, err := sessionlog.DecodeHeader(data[:nl])
	if err != nil {
		return nil, 0, err
	}
	return &sessionlog.Stored{Header: h}, nl, nil
}

// parseEvents decodes the event lines of data, which starts at byte base of
// the log and at line number line (0 when unknown), into st, and marks a
// torn final fragment.
func parseEvents(st *sessionlog.Stored, data []byte, base int64, line int) error {
	off := 0
	st.Events = make([]sessionlog.Event, 0, bytes.Count(data, []byte{'\n'}))
	for ; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			st.TornMarker = base + int64(off)
			break
		}
		e, err := sessionlog.DecodeEvent(data[off : off+end])
		if err != nil && line > 0 {
			return fmt.Errorf("%w: line %d (byte %d): %v", sessionlog.ErrCorrupt, line, base+int64(off), err)
		}
		if err != nil {
			return fmt.Errorf("%w: the line at byte %d: %v", sessionlog.ErrCorrupt, base+int64(off), err)
		}
		st.Events = append(st.Events, e)
		off += end + 1
	}
	return nil
}

// tailChunk is how much more of a log's end a LastTurn load reads each
// time it has not found the last turn/start yet.
const tailChunk = 64 << 10

// readTail reads the header and the events from the last turn/start on,
// reading the log backwards from its end in chunks: what a resume reads
// no longer grows with the session. Only the lines it returns are decoded;
// the Coordinator checks that they begin at a turn/start and run on
// contiguously. A log without a turn/start is read whole.
func readTail(f *os.File, size int64) (*sessionlog.Stored, error) {
	head, err := headerLine(io.NewSectionReader(f, 0, size))
	if err != nil {
		return nil, err
	}
	st, nl, err := parseHeader(head)
	if err != nil {
		return nil, err
	}
	first := int64(nl + 1) // where the events begin
	var buf []byte         // the log from start to size
	start := size
	for start > first {
		from := max(first, start-tailChunk)
		chunk := make([]byte, start-from, int64(len(buf))+start-from)
		if _, err := f.ReadAt(chunk, from); err != nil {
			return nil, err
		}
		buf, start = append(chunk, buf...), from
		if at, ok := lastTurnStart(buf, start == first); ok {
			return st, parseEvents(st, buf[at:], start+int64(at), 0)
		}
	}
	return st, parseEvents(st, buf, first, 2)
}

// lastTurnStart finds the start of the last whole line of buf that is a
// turn/start event. A line is whole when a newline ends it, and it begins
// after a newline or at buf's start when atFirst says buf begins with the
// first event. The match is on the encoder's own layout (seq, then kind);
// the Coordinator decodes and checks the line it returns.
func lastTurnStart(buf []byte, atFirst bool) (int, bool) {
	end := bytes.LastIndexByte(buf, '\n') // the whole lines end here
	for end >= 0 {
		nl := bytes.LastIndexByte(buf[:end], '\n')
		if nl < 0 && !atFirst {
			return 0, false // the line may begin before buf
		}
		if isTurnStart(buf[nl+1 : end]) {
			return nl + 1, true
		}
		end = nl
	}
	return 0, false
}

// isTurnStart reports whether line is the stored form of a turn/start:
// {"seq":N,"kind":"turn/start" followed by the end of the object or more
// fields.
func isTurnStart(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"kind":"turn/start"`))
	return ok && i > 0 && len(rest) > 0 && (rest[0] == '}' || rest[0] == ',')
}

func encodeLines(b *bytes.Buffer, events []sessionlog.Event) error {
	for _, e := range events {
		line, err := sessionlog.EncodeEvent(e)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return nil
}

// AppendBatch implements sessionlog.Storage.
func (s *Store) AppendBatch(_ context.Context, b sessionlog.Batch) error {
	var buf bytes.Buffer
	if b.Materialize {
		h, err := sessionlog.EncodeHeader(b.Header)
		if err != nil {
			return err
		}
		buf.Write(h)
		buf.WriteByte('\n')
	}
	if err := encodeLines(&buf, b.Events); err != nil {
		return err
	}
	if b.Materialize {
		return s.create(b.Header, buf.Bytes())
	}
	path := filepath.Join(s.root, RelPath(b.Header.Cwd, b.Header.ID))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if sessionlog.IsAbsent(err) {
			return notFound("append to session "+b.Header.ID, err)
		}
		return fmt.Errorf("jsonl: open %s: %w", path, err)
	}
	return s.writeSync(f, buf.Bytes(), path)
}

// writeSync writes data, fsyncs and closes f.
func (s *Store) writeSync(f *os.File, data []byte, path string) error {
	err := s.write(f, data)
	if err == nil {
		if err = s.before.Step("fsync"); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("jsonl: write %s: %w", path, err)
	}
	return nil
}

// write writes data with one call. Under a test hook it writes it in two
// halves with a step between, so that a test can cut the write in the
// middle, as a crash can.
func (s *Store) write(f *os.File, data []byte) error {
	if err := s.before.Step("write"); err != nil {
		return err
	}
	if s.before != nil && len(data) > 1 {
		half := len(data) / 2
		if _, err := f.Write(data[:half]); err != nil {
			return err
		}
		if err := s.before.Step("write (second half)"); err != nil {
			return err
		}
		data = data[half:]
	}
	n, err := f.Write(data)
	if err == nil && n != len(data) {
		err = io.ErrShortWrite
	}
	return err
}

// create materializes a log: write it whole into an exclusively created
// 0600 temp file, fsync, link it to its name (which fails rather than
// replace an existing log), drop the temp name and fsync the directories.
func (s *Store) create(h sessionlog.Header, data []byte) error {
	bucket := Bucket(h.Cwd)
	dir := filepath.Join(s.root, bucket)
	if err := s.before.Step("mkdir"); err != nil {
		return fmt.Errorf("jsonl: create bucket %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("jsonl: create bucket %s: %w", dir, err)
	}
	final := filepath.Join(dir, h.ID+Ext)
	if err := s.before.Step("create"); err != nil {
		return fmt.Errorf("jsonl: create temp file: %w", err)
	}
	tmp, err := createTemp(dir, "."+h.ID+Ext+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := s.writeSync(tmp, data, tmp.Name()); err != nil {
		return err
	}
	if err := s.before.Step("link"); err != nil {
		return fmt.Errorf("jsonl: create %s: %w", final, err)
	}
	if err := os.Link(tmp.Name(), final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: jsonl: %s already exists", sessionlog.ErrCollision, final)
		}
		return fmt.Errorf("jsonl: create %s: %w", final, err)
	}
	if err := s.before.Step("remove"); err != nil {
		return fmt.Errorf("jsonl: remove temp file: %w", err)
	}
	if err := os.Remove(tmp.Name()); err != nil {
		return fmt.Errorf("jsonl: remove temp file: %w", err)
	}
	if err := s.syncDir(dir); err != nil {
		return err
	}
	return s.syncDir(s.root)
}

// syncDir is SyncDir as a step of the store's own writes.
func (s *Store) syncDir(dir string) error {
	if err := s.before.Step("fsync dir"); err != nil {
		return fmt.Errorf("jsonl: fsync %s: %w", dir, err)
	}
	return syncDir(dir)
}

// createTemp opens a new file named prefix+random in dir with O_EXCL and
// mode 0600, so a pre-existing or planted path is never followed.
func createTemp(dir, prefix string) (*os.File, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	name := filepath.Join(dir, prefix+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("jsonl: create temp file: %w", err)
	}
	return f, nil
}

// CreateTemp is createTemp for packages that write into a store's layout
// (an archive restoring a session): exclusive, 0600, never following a link.
func CreateTemp(dir, prefix string) (*os.File, error) { return createTemp(dir, prefix) }

// SyncDir fsyncs a directory so that entries created or removed in it are
// durable.
func SyncDir(dir string) error { return syncDir(dir) }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("jsonl: open %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("jsonl: fsync %s: %w", dir, err)
	}
	return nil
}

// CommitRepair implements sessionlog.Storage: cut the torn fragment at its
// byte offset, then write the closers where it began, and fsync.
func (s *Store) CommitRepair(_ context.Context, r sessionlog.Repair) error {
	path := filepath.Join(s.root, RelPath(r.Header.Cwd, r.Header.ID))
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if sessionlog.IsAbsent(err) {
			return notFound("repair session "+r.Header.ID, err)
		}
		return fmt.Errorf("jsonl: open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("jsonl: stat %s: %w", path, err)
	}
	end := fi.Size()
	if r.TornMarker != nil {
		off, ok := r.TornMarker.(int64)
		if !ok || off < 0 || off > end {
			f.Close()
			return fmt.Errorf("jsonl: repair %s: torn marker %v is not an offset inside the file", path, r.TornMarker)
		}
		if err := s.before.Step("truncate"); err != nil {
			f.Close()
			return fmt.Errorf("jsonl: truncate torn tail of %s: %w", path, err)
		}
		if err := f.Truncate(off); err != nil {
			f.Close()
			return fmt.Errorf("jsonl: truncate torn tail of %s: %w", path, err)
		}
		end = off
	}
	var buf bytes.Buffer
	if err := encodeLines(&buf, r.Closers); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		f.Close()
		return fmt.Errorf("jsonl: seek %s: %w", path, err)
	}
	return s.writeSync(f, buf.Bytes(), path)
}

// DeleteStored implements sessionlog.Storage.
func (s *Store) DeleteStored(_ context.Context, id string) error {
	rel, err := Locate(s.root, id)
	if err != nil {
		return err
	}
	path := filepath.Join(s.root, rel)
	if err := s.before.Step("remove"); err != nil {
		return fmt.Errorf("jsonl: delete %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		if sessionlog.IsAbsent(err) {
			return notFound("delete session "+id, err)
		}
		return fmt.Errorf("jsonl: delete %s: %w", path, err)
	}
	return s.syncDir(filepath.Dir(path))
}

// List implements sessionlog.Storage.
func (s *Store) List(context.Context) ([]sessionlog.Header, error) {
	buckets, err := readBuckets(s.root)
	if err != nil {
		return nil, err
	}
	var out []sessionlog.Header
	for _, b := range buckets {
		entries, err := os.ReadDir(filepath.Join(s.root, b))
		if err != nil {
			if sessionlog.IsAbsent(err) {
				continue // removed since the root was read
			}
			return nil, fmt.Errorf("jsonl: read bucket %s: %w", b, err)
		}
		for _, e := range entries {
			id, ok := strings.CutSuffix(e.Name(), Ext)
			if !ok || !e.Type().IsRegular() || sessionlog.ValidateID(id) != nil {
				continue // temp files, strays
			}
			st, err := readLog(s.root, filepath.Join(b, e.Name()), id, sessionlog.HeaderOnly)
			if err != nil {
				if errors.Is(err, sessionlog.ErrNotFound) {
					continue // deleted since the bucket was read
				}
				return nil, err
			}
			out = append(out, st.Header)
		}
	}
	return out, nil
}

// Close implements sessionlog.Storage; a Store holds no open files.
func (s *Store) Close() error { return nil }

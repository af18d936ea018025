package workspace

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// objectStore is one worker's local copy of one run's objects: the packs
// it made or downloaded, and an in-memory map from object id to where it
// is. Packs are never rewritten; a pack is stored only after it was read
// and checked in full. It is a cache: a restarted worker reads its packs
// again, and what is not on disk is downloaded.
type objectStore struct {
	dir string
	// maxObjects caps the objects of all its packs together, so a pack of
	// millions of tiny objects cannot pin a worker's memory.
	maxObjects int
	// users and used are the Manager's (under its lock): the open visits
	// of the run, and when one last closed.
	users int
	used  uint64

	mu    sync.Mutex
	packs map[string]*localPack // by sha256 digest
	objs  map[plumbing.Hash]loc
}

type localPack struct {
	digest  string
	path    string
	size    int64
	entries []entry
	f       *os.File // opened on first read
}

// loc is where an object is: its pack and its index in the pack's
// entries (16 bytes a map value, not a copy of the entry).
type loc struct {
	pack *localPack
	i    int
}

func (l loc) entry() entry { return l.pack.entries[l.i] }

const packExt = ".pack"

// openStore loads the packs already in dir. A pack that no longer reads
// as a sound pack with its digest is removed.
func openStore(ctx context.Context, dir string, lim scanLimits) (*objectStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &objectStore{dir: dir, maxObjects: lim.objects, packs: map[string]*localPack{}, objs: map[plumbing.Hash]loc{}}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, de := range des {
		digest, ok := strings.CutSuffix(de.Name(), packExt)
		p := filepath.Join(dir, de.Name())
		if !ok {
			_ = os.Remove(p) // a temporary file of a crashed write
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		_, err = s.ingest(ctx, f, digest, lim)
		f.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			_ = os.Remove(p)
		}
	}
	return s, nil
}

func (s *objectStore) register(p *localPack) {
	s.packs[p.digest] = p
	for i, e := range p.entries {
		if _, ok := s.objs[e.hash]; !ok {
			s.objs[e.hash] = loc{pack: p, i: i}
		}
	}
}

// closeFiles closes the pack files reads opened; the next read opens its
// pack again.
func (s *objectStore) closeFiles() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.packs {
		if p.f != nil {
			p.f.Close()
			p.f = nil
		}
	}
}

func (s *objectStore) pack(digest string) (*localPack, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.packs[digest]
	return p, ok
}

func (s *objectStore) has(h plumbing.Hash) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.objs[h]
	return ok
}

// lookup returns where an object is.
func (s *objectStore) lookup(h plumbing.Hash) (loc, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.objs[h]
	return l, ok
}

// read returns an object's type and content.
func (s *objectStore) read(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	l, ok := s.lookup(h)
	if !ok {
		return 0, nil, fmt.Errorf("%w: object %s is in no pack", ErrMissing, h)
	}
	f, err := s.file(l.pack)
	if err != nil {
		return 0, nil, err
	}
	e := l.entry()
	b, err := readEntry(f, e)
	return e.typ, b, err
}

// readAs returns an object's content, checking its type.
func (s *objectStore) readAs(h plumbing.Hash, t plumbing.ObjectType) ([]byte, error) {
	got, b, err := s.read(h)
	if err != nil {
		return nil, err
	}
	if got != t {
		return nil, fmt.Errorf("%w: object %s is a %s, not a %s", ErrCorrupt, h, got, t)
	}
	return b, nil
}

func (s *objectStore) file(p *localPack) (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.f == nil {
		f, err := os.Open(p.path)
		if err != nil {
			return nil, fmt.Errorf("workspace: open local pack: %w", err)
		}
		p.f = f
	}
	return p.f, nil
}

// ingest reads a pack from r in full, checks it, and stores it under its
// digest. want is the digest r must have ("" to take it as computed); the
// pack's bytes are checked against it before the pack is kept.
func (s *objectStore) ingest(ctx context.Context, r io.Reader, want string, lim scanLimits) (*localPack, error) {
	if want != "" {
		if p, ok := s.pack(want); ok {
			return p, nil
		}
	}
	tmp, err := os.CreateTemp(s.dir, ".incoming-*")
	if err != nil {
		return nil, err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	sum := sha256.New()
	entries, err := scanPack(ctx, io.TeeReader(r, io.MultiWriter(tmp, sum)), lim)
	if err != nil {
		return nil, err
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	if want != "" && digest != want {
		return nil, fmt.Errorf("%w: got sha256 %s, the key names %s", ErrDigestMismatch, digest, want)
	}
	return s.keep(tmp, digest, entries)
}

// keep moves a complete, checked pack file into the store. It is not
// synced: the store is a cache, and openStore checks what it finds.
func (s *objectStore) keep(tmp *os.File, digest string, entries []entry) (*localPack, error) {
	if p, ok := s.pack(digest); ok {
		return p, nil
	}
	fi, err := tmp.Stat()
	if err != nil {
		return nil, err
	}
	p := &localPack{digest: digest, path: filepath.Join(s.dir, digest+packExt), size: fi.Size(), entries: entries}
	if err := s.room(entries); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), p.path); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.register(p)
	return p, nil
}

// room refuses a pack whose new objects would take the store over its
// cap.
func (s *objectStore) room(entries []entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.objs)
	for _, e := range entries {
		if _, ok := s.objs[e.hash]; !ok {
			n++
		}
	}
	if s.maxObjects > 0 && n > s.maxObjects {
		return fmt.Errorf("%w: the run's packs would hold %d objects, more than the %d its limits allow (TETHER_WORKSPACE_MAX_FILES raises it)", ErrTooLarge, n, s.maxObjects)
	}
	return nil
}

// packBuilder writes a new pack without knowing its object count up front:
// entries go to a body as they come, in memory up to spillBytes and in a
// temporary file beyond, and finish writes the pack (header, body,
// trailer) in one pass, hashing it for its digest.
type packBuilder struct {
	dir  string
	body *spill
	pw   *packWriter
	seen map[plumbing.Hash]bool
}

// spillBytes is the body a builder keeps in memory.
const spillBytes = 32 << 20

func newPackBuilder(dir string) (*packBuilder, error) {
	b := &packBuilder{dir: dir, body: &spill{dir: dir}, seen: map[plumbing.Hash]bool{}}
	// The body's writer declares no count: the header is written by finish.
	b.pw = &packWriter{w: b.body, sum: nopHash{}, off: packHeader}
	zw, err := newZlib(&b.pw.buf)
	if err != nil {
		return nil, err
	}
	b.pw.zw = zw
	return b, nil
}

func (b *packBuilder) add(h plumbing.Hash, t plumbing.ObjectType, content []byte) error {
	if !b.first(h) {
		return nil
	}
	return b.pw.add(h, t, content)
}

func (b *packBuilder) addRaw(e entry, raw []byte) error {
	if !b.first(e.hash) {
		return nil
	}
	return b.pw.addRaw(e, raw)
}

// first reports whether h is new to the pack, and records it.
func (b *packBuilder) first(h plumbing.Hash) bool {
	if b.seen[h] {
		return false
	}
	b.seen[h] = true
	return true
}

// finish writes the pack into a temporary file of dir and returns it with
// its digest and entries; the caller keeps or removes it.
func (b *packBuilder) finish() (*os.File, string, []entry, error) {
	defer b.abort()
	body, err := b.body.reader()
	if err != nil {
		return nil, "", nil, err
	}
	out, err := os.CreateTemp(b.dir, ".pack-*")
	if err != nil {
		return nil, "", nil, err
	}
	sum := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(out, sum), 256<<10)
	pw, err := newPackWriter(bw, len(b.seen))
	if err == nil {
		_, err = io.Copy(pw, body)
	}
	if err == nil {
		err = pw.finish()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		out.Close()
		os.Remove(out.Name())
		return nil, "", nil, err
	}
	return out, hex.EncodeToString(sum.Sum(nil)), b.pw.index, nil
}

func (b *packBuilder) abort() { b.body.close() }

// spill is a buffer that moves to a temporary file once it is large.
type spill struct {
	dir string
	mem bytes.Buffer
	f   *os.File
	bw  *bufio.Writer
}

func (s *spill) Write(p []byte) (int, error) {
	if s.f == nil && s.mem.Len()+len(p) > spillBytes {
		f, err := os.CreateTemp(s.dir, ".body-*")
		if err != nil {
			return 0, err
		}
		s.f, s.bw = f, bufio.NewWriterSize(f, 256<<10)
		if _, err := s.bw.Write(s.mem.Bytes()); err != nil {
			return 0, err
		}
		s.mem = bytes.Buffer{}
	}
	if s.f != nil {
		return s.bw.Write(p)
	}
	return s.mem.Write(p)
}

func (s *spill) reader() (io.Reader, error) {
	if s.f == nil {
		return bytes.NewReader(s.mem.Bytes()), nil
	}
	if err := s.bw.Flush(); err != nil {
		return nil, err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return bufio.NewReaderSize(s.f, 256<<10), nil
}

func (s *spill) close() {
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f = nil
	}
}

// Write lets finish copy a body through the pack writer's checksum.
func (p *packWriter) Write(b []byte) (int, error) {
	if err := p.write(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// nopHash stands in for the checksum of a pack body, which finish computes.
type nopHash struct{ hash.Hash }

func (nopHash) Write(b []byte) (int, error) { return len(b), nil }

package workspace

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	kzlib "github.com/klauspost/compress/zlib"
)

// Packs are git's pack format, version 2, holding whole objects only (no
// deltas): "PACK", version, object count, then per object a type-and-size
// header and the zlib-compressed content, then the SHA-1 of everything
// before it. `git index-pack` reads them as they are. Whole objects cost a
// little more bytes than deltas but let two packs merge by copying their
// entries, and let a reader check every object's size before inflating it.
const (
	packMagic   = "PACK"
	packVersion = 2
	packHeader  = 12
	packTrailer = sha1.Size
)

// entry is one object of a pack.
type entry struct {
	hash plumbing.Hash
	typ  plumbing.ObjectType
	size int64 // inflated content size
	off  int64 // where the entry's header starts in the pack
	n    int64 // the entry's length: header plus compressed data
}

// packWriter writes a pack whose object count is known up front (the
// caller writes exactly that many objects).
type packWriter struct {
	w     io.Writer
	sum   hash.Hash
	off   int64
	zw    *kzlib.Writer
	buf   bytes.Buffer
	index []entry
}

func newPackWriter(w io.Writer, count int) (*packWriter, error) {
	if count < 0 || uint64(count) > uint64(^uint32(0)) {
		return nil, fmt.Errorf("workspace: pack of %d objects", count)
	}
	p := &packWriter{w: w, sum: sha1.New()}
	var h [packHeader]byte
	copy(h[:], packMagic)
	binary.BigEndian.PutUint32(h[4:], packVersion)
	binary.BigEndian.PutUint32(h[8:], uint32(count))
	if err := p.write(h[:]); err != nil {
		return nil, err
	}
	zw, err := newZlib(&p.buf)
	if err != nil {
		return nil, err
	}
	p.zw = zw
	return p, nil
}

// newZlib compresses at the fastest level: a snapshot is on a visit's
// critical path, and whole-object packs are small next to the files.
func newZlib(w io.Writer) (*kzlib.Writer, error) { return kzlib.NewWriterLevel(w, kzlib.BestSpeed) }

func (p *packWriter) write(b []byte) error {
	n, err := p.w.Write(b)
	p.sum.Write(b[:n])
	p.off += int64(n)
	return err
}

// add writes one object.
func (p *packWriter) add(h plumbing.Hash, t plumbing.ObjectType, content []byte) error {
	p.buf.Reset()
	p.buf.Write(entryHeader(t, int64(len(content))))
	p.zw.Reset(&p.buf)
	if _, err := p.zw.Write(content); err != nil {
		return err
	}
	if err := p.zw.Close(); err != nil {
		return err
	}
	e := entry{hash: h, typ: t, size: int64(len(content)), off: p.off, n: int64(p.buf.Len())}
	if err := p.write(p.buf.Bytes()); err != nil {
		return err
	}
	p.index = append(p.index, e)
	return nil
}

// addRaw copies an entry read from another pack as it is.
func (p *packWriter) addRaw(e entry, raw []byte) error {
	e.off = p.off
	e.n = int64(len(raw))
	if err := p.write(raw); err != nil {
		return err
	}
	p.index = append(p.index, e)
	return nil
}

// finish writes the trailer.
func (p *packWriter) finish() error {
	_, err := p.w.Write(p.sum.Sum(nil))
	return err
}

func entryHeader(t plumbing.ObjectType, size int64) []byte {
	b := []byte{byte(t)<<4 | byte(size&0x0f)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	return b
}

// scanLimits bound what a pack may make a reader inflate.
type scanLimits struct {
	objects   int
	blobBytes int64 // one blob
	total     int64 // all objects together, inflated
}

func scanLimitsOf(l Limits) scanLimits {
	l = withDefaults(l)
	return scanLimits{
		// every file and every directory of a snapshot at its limit,
		// and the history of a long run: each visit adds a commit and
		// the files and trees it changed. The cap bounds what a run's
		// object map holds in a worker's memory (~100 bytes an object).
		objects:   2*l.MaxFiles + maxHistoryObjects,
		blobBytes: l.MaxFileBytes,
		total:     2*l.MaxTotalBytes + 1<<30,
	}
}

// scanPack reads a whole pack, checks it, and returns the entries of its
// objects (hash, type, size and where each lies). A pack with delta
// objects, an object over the limits, a stream that does not inflate to
// the declared size, a bad trailer or trailing bytes is ErrCorrupt or
// ErrTooLarge, found before anything past the bad object is read.
func scanPack(ctx context.Context, r io.Reader, lim scanLimits) (entries []entry, err error) {
	defer func() {
		// The zlib reader is standard library code fed hostile bytes; a
		// panic there must still be a typed refusal, not a crashed worker.
		if p := recover(); p != nil {
			entries, err = nil, fmt.Errorf("%w: pack reader failed: %v", ErrCorrupt, p)
		}
	}()
	cr := &countReader{r: bufio.NewReaderSize(r, 64<<10), sum: sha1.New()}
	var h [packHeader]byte
	if _, err := io.ReadFull(cr, h[:]); err != nil {
		return nil, fmt.Errorf("%w: pack header: %v", ErrCorrupt, err)
	}
	if string(h[:4]) != packMagic || binary.BigEndian.Uint32(h[4:]) != packVersion {
		return nil, fmt.Errorf("%w: not a version-2 pack", ErrCorrupt)
	}
	count := binary.BigEndian.Uint32(h[8:])
	if uint64(count) > uint64(lim.objects) {
		return nil, fmt.Errorf("%w: pack declares %d objects, more than %d", ErrTooLarge, count, lim.objects)
	}
	var zr io.ReadCloser
	var total int64
	buf := make([]byte, 32<<10)
	for i := uint32(0); i < count; i++ {
		off := cr.n
		t, size, err := readEntryHeader(cr)
		if err != nil {
			return nil, err
		}
		switch t {
		case plumbing.CommitObject, plumbing.TreeObject:
			if size > maxObjectBytes {
				return nil, fmt.Errorf("%w: a %s object of %d bytes", ErrTooLarge, t, size)
			}
		case plumbing.BlobObject:
			if size > lim.blobBytes {
				return nil, fmt.Errorf("%w: a file of %d bytes, over the %d-byte single-file limit", ErrTooLarge, size, lim.blobBytes)
			}
		case plumbing.OFSDeltaObject, plumbing.REFDeltaObject:
			return nil, fmt.Errorf("%w: object %d is a delta; workspace packs hold whole objects only", ErrCorrupt, i)
		default:
			return nil, fmt.Errorf("%w: object %d has type %d", ErrCorrupt, i, t)
		}
		if total += size; total > lim.total {
			return nil, fmt.Errorf("%w: pack inflates to more than %d bytes", ErrTooLarge, lim.total)
		}
		if zr == nil {
			zr, err = zlib.NewReader(cr)
		} else {
			err = zr.(zlib.Resetter).Reset(cr, nil)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: object %d: %v", ErrCorrupt, i, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hs := plumbing.NewHasher(t, size)
		n, err := io.CopyBuffer(hs, &ctxReader{ctx: ctx, r: io.LimitReader(zr, size)}, buf)
		if err == nil && n != size {
			err = io.ErrUnexpectedEOF
		}
		if err == nil {
			// Reading on makes the zlib reader check its checksum, and
			// finds a stream longer than its declared size.
			if k, rerr := zr.Read(buf[:1]); k != 0 {
				err = fmt.Errorf("more data than the declared %d bytes", size)
			} else if rerr != io.EOF {
				err = rerr
			}
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if err != nil {
			return nil, fmt.Errorf("%w: object %d: %v", ErrCorrupt, i, err)
		}
		entries = append(entries, entry{hash: hs.Sum(), typ: t, size: size, off: off, n: cr.n - off})
	}
	want := cr.sum.Sum(nil)
	var got [packTrailer]byte
	if _, err := io.ReadFull(cr.r, got[:]); err != nil {
		return nil, fmt.Errorf("%w: pack trailer: %v", ErrCorrupt, err)
	}
	if !bytes.Equal(want, got[:]) {
		return nil, fmt.Errorf("%w: pack checksum does not match its content", ErrCorrupt)
	}
	if _, err := cr.r.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("%w: bytes after the pack trailer", ErrCorrupt)
	}
	return entries, nil
}

// maxHistoryObjects is what a run's history may add to the objects of
// one snapshot at the limits.
const maxHistoryObjects = 50_000

// ctxReader stops a read loop over untrusted bytes once its context ends:
// it checks the context every ctxEvery bytes, so a pack that inflates to
// gigabytes is dropped within milliseconds of a deadline.
type ctxReader struct {
	ctx  context.Context
	r    io.Reader
	left int
}

const ctxEvery = 1 << 20

func (c *ctxReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if err := c.ctx.Err(); err != nil {
			return 0, err
		}
		c.left = ctxEvery
	}
	n, err := c.r.Read(p)
	c.left -= n
	return n, err
}

func readEntryHeader(r io.ByteReader) (plumbing.ObjectType, int64, error) {
	b, err := r.ReadByte()
	if err != nil {
		return 0, 0, fmt.Errorf("%w: entry header: %v", ErrCorrupt, err)
	}
	t := plumbing.ObjectType((b >> 4) & 7)
	size := int64(b & 0x0f)
	shift := uint(4)
	for b&0x80 != 0 {
		if shift > 56 {
			return 0, 0, fmt.Errorf("%w: entry size does not fit 64 bits", ErrCorrupt)
		}
		if b, err = r.ReadByte(); err != nil {
			return 0, 0, fmt.Errorf("%w: entry header: %v", ErrCorrupt, err)
		}
		size |= int64(b&0x7f) << shift
		shift += 7
	}
	return t, size, nil
}

// countReader counts and hashes what it reads. It is a flate.Reader, so the
// zlib reader on top of it reads exactly one compressed stream and no byte
// beyond.
type countReader struct {
	r   *bufio.Reader
	n   int64
	sum hash.Hash
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.sum.Write(p[:n])
	return n, err
}

func (c *countReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
		c.sum.Write([]byte{b})
	}
	return b, err
}

// readEntry inflates the object whose entry starts at e.off in the pack
// read by ra, checking it against e.
func readEntry(ra io.ReaderAt, e entry) ([]byte, error) {
	sr := io.NewSectionReader(ra, e.off, e.n)
	br := bufio.NewReader(sr)
	t, size, err := readEntryHeader(br)
	if err != nil {
		return nil, err
	}
	if t != e.typ || size != e.size {
		return nil, fmt.Errorf("%w: object %s is not where the pack index says", ErrCorrupt, e.hash)
	}
	zr, err := zlib.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%w: object %s: %v", ErrCorrupt, e.hash, err)
	}
	defer zr.Close()
	content := make([]byte, size)
	if _, err := io.ReadFull(zr, content); err != nil {
		return nil, fmt.Errorf("%w: object %s: %v", ErrCorrupt, e.hash, err)
	}
	if plumbing.ComputeHash(t, content) != e.hash {
		return nil, fmt.Errorf("%w: object %s does not hash to its name", ErrCorrupt, e.hash)
	}
	return content, nil
}

// readRaw returns an entry's bytes as they are in the pack.
func readRaw(ra io.ReaderAt, e entry) ([]byte, error) {
	raw := make([]byte, e.n)
	if _, err := ra.ReadAt(raw, e.off); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%w: object %s: %v", ErrCorrupt, e.hash, err)
	}
	return raw, nil
}

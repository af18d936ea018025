package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"

	"github.com/klauspost/compress/zstd"
)

// A session restored from parts streams. The deltas, which hold what
// visits added, are read into memory first (AddDelta); the base is then
// read once, in order (Walk), and each file is handed out as its base
// bytes followed by the bytes the deltas append, every link of the chain
// checked against a running sha256 as the bytes pass. A session of tens
// of MB is never held whole in memory.

// Check vets one tar entry before anything of it is read and returns its
// name (a directory's without its trailing slash); an error refuses the
// archive. The packer's checks its layout's whitelist and the deny list.
type Check func(th *tar.Header) (name string, err error)

// Reader reads archive payloads: every entry vetted by Check, the stream
// capped by Limits (defaults filled; see WithDefaults).
type Reader struct {
	Limits Limits
	Check  Check
}

// Entries calls fn for every entry of an archive's payload, each vetted
// by Check, and refuses a name that appears twice or a file over
// MaxFileBytes. It reads the stream to its end, which verifies the zstd
// frame's checksum, unless fn fails; fn's error is returned, wrapped.
func (rd Reader) Entries(ctx context.Context, dec *zstd.Decoder, payload []byte, fn func(th *tar.Header, name string, r io.Reader) error) error {
	if err := dec.Reset(bytes.NewReader(payload)); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	stream := &CapReader{Ctx: ctx, R: dec, Left: MaxStreamBytes(rd.Limits)}
	tr := tar.NewReader(stream)
	seen := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		th, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return StreamErr(err)
		}
		name, err := rd.Check(th)
		if err != nil {
			return err
		}
		if seen[name] {
			return fmt.Errorf("%w: entry %q appears twice", ErrCorrupt, name)
		}
		seen[name] = true
		if th.Typeflag == tar.TypeReg && th.Size > rd.Limits.MaxFileBytes {
			return fmt.Errorf("%w: entry %q is %d bytes, over the %d-byte single-file limit", ErrTooLarge, name, th.Size, rd.Limits.MaxFileBytes)
		}
		if err := fn(th, name, tr); err != nil {
			return fmt.Errorf("entry %q: %w", name, err)
		}
	}
	return Drain(stream)
}

// segment is what one delta does to one file: replace it whole (offset
// -1), or append to it at offset, after a prefix whose sha256 is prefix.
// sum is the sha256 of the file it leaves.
type segment struct {
	offset int64
	prefix string
	sum    string
	data   []byte
}

// Chain is what the deltas of a session do, by entry name.
type Chain struct {
	segs map[string][]segment
	dirs map[string]bool
	// added lists the names the deltas bring, in order of first appearance.
	added []string
	bytes int64
}

// NewChain returns the chain of no deltas.
func NewChain() *Chain {
	return &Chain{segs: map[string][]segment{}, dirs: map[string]bool{}}
}

// AddDelta adds what one delta's payload does to c. The deltas are added
// in the order they were packed, all before Walk.
func (rd Reader) AddDelta(ctx context.Context, c *Chain, dec *zstd.Decoder, payload []byte) error {
	return rd.Entries(ctx, dec, payload, func(th *tar.Header, name string, r io.Reader) error {
		_, known := c.segs[name]
		if !known && !c.dirs[name] {
			c.added = append(c.added, name)
		}
		if th.Typeflag == tar.TypeDir {
			if known {
				return fmt.Errorf("%w: a folder where an earlier part has a file", ErrBrokenChain)
			}
			c.dirs[name] = true
			return nil
		}
		if c.dirs[name] {
			return fmt.Errorf("%w: a file where an earlier part has a folder", ErrBrokenChain)
		}
		sg := segment{offset: -1, sum: th.PAXRecords[PAXSum]}
		if v, ok := th.PAXRecords[PAXOffset]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("%w: offset %q", ErrCorrupt, v)
			}
			sg.offset, sg.prefix = n, th.PAXRecords[PAXPrefix]
		}
		if c.bytes += th.Size; c.bytes > rd.Limits.MaxTotalBytes {
			return fmt.Errorf("%w: the deltas hold more than the %d-byte total limit", ErrTooLarge, rd.Limits.MaxTotalBytes)
		}
		sg.data = make([]byte, th.Size)
		if _, err := io.ReadFull(r, sg.data); err != nil {
			return StreamErr(err)
		}
		c.segs[name] = append(c.segs[name], sg)
		return nil
	})
}

// Walk hands fn every file and folder of the session the base payload and
// c's deltas make: the base's entries in order, each file with what the
// deltas did to it, then what the deltas added. A File checks the chain
// as it is read; fn reads it to its end to have every link checked, or
// stops early (returning an error of its own, which Walk returns wrapped)
// when it has what it needs.
func (rd Reader) Walk(ctx context.Context, c *Chain, dec *zstd.Decoder, base []byte, fn func(f *File) error) error {
	inBase := map[string]bool{}
	err := rd.Entries(ctx, dec, base, func(th *tar.Header, name string, r io.Reader) error {
		inBase[name] = true
		if th.Typeflag == tar.TypeDir {
			if len(c.segs[name]) > 0 {
				return fmt.Errorf("%w: a delta has a file where the base has a folder", ErrBrokenChain)
			}
			return fn(&File{Name: name, Dir: true})
		}
		if c.dirs[name] {
			return fmt.Errorf("%w: a delta has a folder where the base has a file", ErrBrokenChain)
		}
		f, err := newFile(name, r, th.Size, c.segs[name])
		if err != nil {
			return err
		}
		return fn(f)
	})
	if err != nil {
		return err
	}
	for _, name := range c.added {
		if inBase[name] {
			continue
		}
		f := &File{Name: name, Dir: true}
		if !c.dirs[name] {
			if f, err = newFile(name, nil, -1, c.segs[name]); err != nil {
				return fmt.Errorf("entry %q: %w", name, err)
			}
		}
		if err := fn(f); err != nil {
			return fmt.Errorf("entry %q: %w", name, err)
		}
	}
	return nil
}

// File is one file (or folder, Dir) of an assembled session, read in
// order. Reading it checks the chain of parts that made it: a delta that
// does not follow the bytes before it fails the Read with ErrBrokenChain.
type File struct {
	Name string
	Dir  bool
	// Size is the file's size once assembled.
	Size int64

	h     hash.Hash
	steps []step
	cur   io.Reader
	err   error
}

// step is one stretch of a file's bytes, after a check of the bytes
// before it.
type step struct {
	before func(sum string) error
	r      io.Reader
}

// newFile assembles one file: its base bytes (size of them from base;
// size -1 when the base has no such file), or the last whole replacement a
// delta made, followed by the appends after that. Each append must follow
// the bytes before it (offset and sha256), and each delta must leave the
// file it was packed from.
func newFile(name string, base io.Reader, size int64, segs []segment) (*File, error) {
	from := -1 // the last whole replacement, if any
	for i, sg := range segs {
		if sg.offset < 0 {
			from = i
		}
	}
	if from < 0 && size < 0 {
		return nil, fmt.Errorf("%w: it appends to a file no earlier part holds", ErrBrokenChain)
	}
	f := &File{Name: name, h: sha256.New()}
	if from >= 0 {
		// Replaced: the base's bytes are not used (the tar reader skips them).
		base, size = bytes.NewReader(segs[from].data), int64(len(segs[from].data))
	}
	f.steps = append(f.steps, step{r: io.LimitReader(base, size)})
	if from >= 0 {
		f.steps = append(f.steps, step{before: follows(segs[from].sum)})
	}
	total := size
	for _, sg := range segs[from+1:] {
		if sg.offset != total {
			return nil, fmt.Errorf("%w: it appends at byte %d to a file of %d bytes", ErrBrokenChain, sg.offset, total)
		}
		total += int64(len(sg.data))
		f.steps = append(f.steps,
			step{before: after(sg.prefix), r: bytes.NewReader(sg.data)},
			step{before: follows(sg.sum)})
	}
	f.Size = total
	return f, nil
}

// follows checks that the file so far is the one a delta was packed from.
func follows(want string) func(string) error {
	return func(sum string) error {
		if sum != want {
			return fmt.Errorf("%w: the file it leaves is not the one it was packed from", ErrBrokenChain)
		}
		return nil
	}
}

// after checks that the file so far is the one a delta appends to.
func after(prefix string) func(string) error {
	return func(sum string) error {
		if sum != prefix {
			return fmt.Errorf("%w: the file it appends to is not the one it was packed after", ErrBrokenChain)
		}
		return nil
	}
}

// Read reads the assembled file; it fails with ErrBrokenChain where a
// part does not follow the bytes before it, and with io.ErrUnexpectedEOF
// (as ErrCorrupt) on a base entry shorter than its header says.
func (f *File) Read(p []byte) (int, error) {
	for {
		if f.err != nil {
			return 0, f.err
		}
		if f.cur == nil {
			if len(f.steps) == 0 {
				return 0, io.EOF
			}
			s := f.steps[0]
			f.steps = f.steps[1:]
			if s.before != nil {
				if err := s.before(hex.EncodeToString(f.h.Sum(nil))); err != nil {
					f.err = err
					return 0, err
				}
			}
			f.cur = s.r
			continue
		}
		n, err := f.cur.Read(p)
		f.h.Write(p[:n])
		switch {
		case err == io.EOF:
			f.cur = nil
			if n == 0 {
				continue
			}
		case err != nil:
			f.err = StreamErr(err)
			return n, f.err
		}
		return n, nil
	}
}

// Sum is the sha256 of the bytes read so far: the file's, once Read has
// returned io.EOF.
func (f *File) Sum() hash.Hash { return f.h }

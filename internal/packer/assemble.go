package packer

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"

	"github.com/klauspost/compress/zstd"
)

// A restore from parts streams. The deltas, which hold what visits added,
// are read into memory first; the base is then read once, in order, and
// each file goes to the extraction as its base bytes followed by the bytes
// the deltas append, every link of the chain checked against a running
// sha256 as the bytes pass. A session of tens of MB is never held whole in
// memory, and costs one sha256 pass more than UnpackSession.

// segment is what one delta does to one file: replace it whole (offset
// -1), or append to it at offset, after a prefix whose sha256 is prefix.
// sum is the sha256 of the file it leaves.
type segment struct {
	offset int64
	prefix string
	sum    string
	data   []byte
}

// chain is what the deltas of a restore do, by archive name.
type chain struct {
	segs map[string][]segment
	dirs map[string]bool
	// added lists the names the deltas bring, in order of first appearance.
	added []string
	bytes int64
}

func (p *Packer) unpackParts(ctx context.Context, id string, parts [][]byte) (*Manifest, error) {
	if err := p.check(id); err != nil {
		return nil, err
	}
	switch {
	case len(parts) == 0:
		return nil, fmt.Errorf("%w: no parts", ErrBrokenChain)
	case len(parts) > MaxParts:
		return nil, fmt.Errorf("%w: %d parts, more than %d", ErrTooLarge, len(parts), MaxParts)
	}
	resolve, err := p.layout.Resolver(p.env, id)
	if err != nil {
		return nil, err
	}
	payloads := make([][]byte, len(parts))
	for i, blob := range parts {
		if payloads[i], err = p.partPayload(i, id, blob); err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
	}
	c := &chain{segs: map[string][]segment{}, dirs: map[string]bool{}}
	deltas, err := p.newDecoder()
	if err != nil {
		return nil, err
	}
	defer deltas.Close()
	for i := 1; i < len(parts); i++ {
		if err := p.readDelta(ctx, id, resolve, c, deltas, payloads[i]); err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
	}
	dec, err := p.decoder(2) // the base: decoded ahead of assembly, on another core
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	m := &Manifest{Files: map[string]FileState{}}
	err = p.place(ctx, id, func(stage *os.Root, stageAbs string) (map[string]Place, error) {
		pipe := newChunkPipe()
		written := make(chan error, 1)
		go func() {
			err := p.writeChain(ctx, id, resolve, c, dec, payloads[0], pipe, m)
			pipe.CloseWrite(err)
			written <- err
		}()
		placed, err := p.extractTar(ctx, stage, stageAbs, id, &capReader{ctx: ctx, r: pipe, left: maxStreamBytes(p.limits)})
		pipe.CloseRead() // ends the writer if extraction stopped early
		// The writer's own failure (a broken chain) is the cause of the
		// broken stream the extraction saw; a writer stopped by the closed
		// pipe only follows the extraction's.
		if werr := <-written; werr != nil && !pipe.closed {
			return nil, werr
		}
		return placed, err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// partPayload checks part i's header (the first part whole, the others
// deltas, all of this backend and session) and returns its payload.
func (p *Packer) partPayload(i int, id string, blob []byte) ([]byte, error) {
	h, payload, err := p.payload(id, blob)
	if err != nil {
		return nil, err
	}
	switch {
	case i == 0 && h.Kind != "":
		return nil, fmt.Errorf("%w: the first part is a %s, not a whole archive", ErrBrokenChain, h.Kind)
	case i > 0 && h.Kind != KindDelta:
		return nil, fmt.Errorf("%w: a part after the first is %q, not a %s", ErrBrokenChain, h.Kind, KindDelta)
	}
	return payload, nil
}

// newDecoder returns a zstd decoder within the packer's limits. One
// decoder reads every delta of a restore in turn: making one allocates its
// window, which cost more than reading a small delta.
func (p *Packer) newDecoder() (*zstd.Decoder, error) {
	return p.decoder(1)
}

// decoder is newDecoder decoding up to n blocks ahead of its reader, in
// goroutines of its own when n > 1.
func (p *Packer) decoder(n int) (*zstd.Decoder, error) {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(n),
		zstd.WithDecoderMaxMemory(uint64(max(maxStreamBytes(p.limits), maxWindow))),
		zstd.WithDecoderMaxWindow(maxWindow))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return dec, nil
}

// entries calls fn for every entry of an archive's payload, each checked
// against the layout, and refuses a name that appears twice.
func (p *Packer) entries(ctx context.Context, id string, resolve func(string) (Place, bool), dec *zstd.Decoder, payload []byte, fn func(th *tar.Header, name string, r io.Reader) error) error {
	if err := dec.Reset(bytes.NewReader(payload)); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	stream := &capReader{ctx: ctx, r: dec, left: maxStreamBytes(p.limits)}
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
			return streamErr(err)
		}
		name, _, _, err := p.checkEntry(th, id, resolve)
		if err != nil {
			return err
		}
		if seen[name] {
			return fmt.Errorf("%w: entry %q appears twice", ErrCorrupt, name)
		}
		seen[name] = true
		if th.Typeflag == tar.TypeReg && th.Size > p.limits.MaxFileBytes {
			return fmt.Errorf("%w: entry %q is %d bytes, over the %d-byte single-file limit", ErrTooLarge, name, th.Size, p.limits.MaxFileBytes)
		}
		if err := fn(th, name, tr); err != nil {
			return fmt.Errorf("entry %q: %w", name, err)
		}
	}
	return drain(stream)
}

// readDelta adds what one delta does to c.
func (p *Packer) readDelta(ctx context.Context, id string, resolve func(string) (Place, bool), c *chain, dec *zstd.Decoder, payload []byte) error {
	return p.entries(ctx, id, resolve, dec, payload, func(th *tar.Header, name string, r io.Reader) error {
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
		sg := segment{offset: -1, sum: th.PAXRecords[paxSum]}
		if v, ok := th.PAXRecords[paxOffset]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("%w: offset %q", ErrCorrupt, v)
			}
			sg.offset, sg.prefix = n, th.PAXRecords[paxPrefix]
		}
		if c.bytes += th.Size; c.bytes > p.limits.MaxTotalBytes {
			return fmt.Errorf("%w: the deltas hold more than the %d-byte total limit", ErrTooLarge, p.limits.MaxTotalBytes)
		}
		sg.data = make([]byte, th.Size)
		if _, err := io.ReadFull(r, sg.data); err != nil {
			return streamErr(err)
		}
		c.segs[name] = append(c.segs[name], sg)
		return nil
	})
}

// writeChain writes the assembled session to w as one tar stream: the
// base's entries in order, each file with what the deltas did to it, then
// what the deltas added. It records each file in m.
func (p *Packer) writeChain(ctx context.Context, id string, resolve func(string) (Place, bool), c *chain, dec *zstd.Decoder, base []byte, w io.Writer, m *Manifest) error {
	tw := tar.NewWriter(w)
	inBase := map[string]bool{}
	err := p.entries(ctx, id, resolve, dec, base, func(th *tar.Header, name string, r io.Reader) error {
		inBase[name] = true
		if th.Typeflag == tar.TypeDir {
			if len(c.segs[name]) > 0 {
				return fmt.Errorf("%w: a delta has a file where the base has a folder", ErrBrokenChain)
			}
			return writeDir(tw, name)
		}
		if c.dirs[name] {
			return fmt.Errorf("%w: a delta has a folder where the base has a file", ErrBrokenChain)
		}
		return writeFile(tw, name, r, th.Size, c.segs[name], m)
	})
	if err != nil {
		return err
	}
	for _, name := range c.added {
		if inBase[name] {
			continue
		}
		if c.dirs[name] {
			if err := writeDir(tw, name); err != nil {
				return err
			}
			continue
		}
		if err := writeFile(tw, name, nil, -1, c.segs[name], m); err != nil {
			return fmt.Errorf("entry %q: %w", name, err)
		}
	}
	return tw.Close()
}

func writeDir(tw *tar.Writer, name string) error {
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: dirMode, ModTime: epoch, Format: tar.FormatPAX})
}

// writeFile writes one file: its base bytes (size of them from base; size
// -1 when the base has no such file), or the last whole replacement a
// delta made, followed by the appends after that. Each append must follow
// the bytes before it (offset and sha256), and each delta must leave the
// file it was packed from.
func writeFile(tw *tar.Writer, name string, base io.Reader, size int64, segs []segment, m *Manifest) error {
	from := -1 // the last whole replacement, if any
	for i, sg := range segs {
		if sg.offset < 0 {
			from = i
		}
	}
	if from < 0 && size < 0 {
		return fmt.Errorf("%w: it appends to a file no earlier part holds", ErrBrokenChain)
	}
	if from >= 0 {
		if base != nil {
			if _, err := io.Copy(io.Discard, base); err != nil { // replaced: its bytes are not used
				return streamErr(err)
			}
		}
		base, size = bytes.NewReader(segs[from].data), int64(len(segs[from].data))
	}
	appends := segs[from+1:]
	total := size
	for _, sg := range appends {
		if sg.offset != total {
			return fmt.Errorf("%w: it appends at byte %d to a file of %d bytes", ErrBrokenChain, sg.offset, total)
		}
		total += int64(len(sg.data))
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: total, Mode: fileMode, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	h, sm := sha256.New(), newSampler(total)
	out := io.MultiWriter(tw, h, sm)
	if _, err := io.CopyN(out, base, size); err != nil {
		return streamErr(err)
	}
	if from >= 0 {
		if err := follows(h, segs[from].sum); err != nil {
			return err
		}
	}
	for _, sg := range appends {
		if hexSum(h) != sg.prefix {
			return fmt.Errorf("%w: the file it appends to is not the one it was packed after", ErrBrokenChain)
		}
		if _, err := out.Write(sg.data); err != nil {
			return err
		}
		if err := follows(h, sg.sum); err != nil {
			return err
		}
	}
	m.Files[name] = FileState{Size: total, SHA256: hexSum(h), State: hashState(h), Sample: sm.sum()}
	return nil
}

// follows checks that the file so far is the one a delta was packed from.
func follows(h hash.Hash, sum string) error {
	if hexSum(h) != sum {
		return fmt.Errorf("%w: the file it leaves is not the one it was packed from", ErrBrokenChain)
	}
	return nil
}

package packer

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"

	"github.com/tether-run/tether/internal/packer/archive"
)

// A restore from parts streams (archive.Reader.Walk): the deltas are read
// into memory first, then the base once, in order, and the assembled tar
// stream goes to the same extraction as UnpackSession's through a pipe.
// It costs one sha256 pass more than UnpackSession.

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
	rd, err := p.reader(id)
	if err != nil {
		return nil, err
	}
	payloads := make([][]byte, len(parts))
	for i, blob := range parts {
		if payloads[i], err = p.partPayload(i, id, blob); err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
	}
	c := archive.NewChain()
	deltas, err := p.newDecoder()
	if err != nil {
		return nil, err
	}
	defer deltas.Close()
	for i := 1; i < len(parts); i++ {
		if err := rd.AddDelta(ctx, c, deltas, payloads[i]); err != nil {
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
			err := writeChain(ctx, rd, c, dec, payloads[0], pipe, m)
			pipe.CloseWrite(err)
			written <- err
		}()
		placed, err := p.extractTar(ctx, stage, stageAbs, id, &archive.CapReader{Ctx: ctx, R: pipe, Left: maxStreamBytes(p.limits)})
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

// reader reads archives of session id: every entry checked against the
// layout and the limits.
func (p *Packer) reader(id string) (archive.Reader, error) {
	resolve, err := p.layout.Resolver(p.env, id)
	if err != nil {
		return archive.Reader{}, err
	}
	return archive.Reader{Limits: p.limits, Check: func(th *tar.Header) (string, error) {
		name, _, _, err := p.checkEntry(th, id, resolve)
		return name, err
	}}, nil
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
	return archive.NewDecoder(p.limits, n)
}

// writeChain writes the assembled session to w as one tar stream and
// records each file in m.
func writeChain(ctx context.Context, rd archive.Reader, c *archive.Chain, dec *zstd.Decoder, base []byte, w io.Writer, m *Manifest) error {
	tw := tar.NewWriter(w)
	err := rd.Walk(ctx, c, dec, base, func(f *archive.File) error {
		if f.Dir {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: f.Name + "/", Mode: dirMode, ModTime: epoch, Format: tar.FormatPAX})
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Name, Size: f.Size, Mode: fileMode, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		sm := newSampler(f.Size)
		if _, err := io.Copy(io.MultiWriter(tw, sm), f); err != nil {
			return err
		}
		h := f.Sum()
		m.Files[f.Name] = FileState{Size: f.Size, SHA256: hexSum(h), State: hashState(h), Sample: sm.sum()}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

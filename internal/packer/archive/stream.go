package archive

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/klauspost/compress/zstd"
)

// MaxWindow caps the zstd window a frame may ask for; Tether's use 8 MiB.
const MaxWindow = 64 << 20

// NewDecoder returns a zstd decoder for archives within l (defaults
// filled), decoding up to n blocks ahead of its reader, in goroutines of
// its own when n > 1. One decoder reads many payloads in turn (Reset):
// making one allocates its window.
func NewDecoder(l Limits, n int) (*zstd.Decoder, error) {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(n),
		zstd.WithDecoderMaxMemory(uint64(max(MaxStreamBytes(l), MaxWindow))),
		zstd.WithDecoderMaxWindow(MaxWindow))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return dec, nil
}

// CapReader fails with ErrTooLarge once more than Left bytes were read,
// and with the context's error once it is done (checked every MiB, so a
// single huge entry cannot outlive a deadline).
type CapReader struct {
	Ctx       context.Context
	R         io.Reader
	Left      int64
	sinceTick int64
}

func (c *CapReader) Read(b []byte) (int, error) {
	if c.sinceTick >= 1<<20 {
		c.sinceTick = 0
		if err := c.Ctx.Err(); err != nil {
			return 0, err
		}
	}
	// Asking for one byte past the cap tells a stream that ends exactly at
	// the cap from one that goes on.
	if int64(len(b)) > c.Left+1 {
		b = b[:c.Left+1]
	}
	n, err := c.R.Read(b)
	if int64(n) > c.Left {
		return 0, fmt.Errorf("%w: decompressed stream over the cap", ErrTooLarge)
	}
	c.Left -= int64(n)
	c.sinceTick += int64(n)
	return n, err
}

// Drain reads what follows the tar end-of-archive marker to the end of the
// zstd frame, which makes the decoder verify the frame's checksum. Only
// zero padding may follow.
func Drain(r io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			if b != 0 {
				return fmt.Errorf("%w: data after the end of the archive", ErrCorrupt)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return StreamErr(err)
		}
	}
}

// StreamErr classifies a failure reading an archive's stream: the
// decoder's limits are ErrTooLarge, a local file system failure is
// itself, and anything else the archive's fault (ErrCorrupt).
func StreamErr(err error) error {
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrCorrupt) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && !isStreamErr(pe.Err) {
		return err // a local file system failure, not the archive's fault
	}
	return fmt.Errorf("%w: %v", ErrCorrupt, err)
}

func isStreamErr(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrHeader)
}

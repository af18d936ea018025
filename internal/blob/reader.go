package blob

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
)

// errBodySize: a Put's reader gave more or fewer bytes than it declared.
// It is the caller's mistake, never cured by trying again.
var errBodySize = errors.New("blob: the body's size differs from the declared size")

// exactReader passes r through and fails, before the final EOF reaches the
// writer, when r delivers more or fewer than size bytes (size < 0: any).
// Backends commit only after seeing EOF, so a short or long stream never
// becomes a blob.
type exactReader struct {
	r    io.Reader
	key  string
	size int64
	n    int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.n += int64(n)
	if e.size >= 0 && e.n > e.size {
		return n, fmt.Errorf("%w: put %q: the reader gave more than the declared %d bytes", errBodySize, e.key, e.size)
	}
	if err == io.EOF && e.size >= 0 && e.n < e.size {
		return n, fmt.Errorf("%w: put %q: the reader gave %d of the declared %d bytes", errBodySize, e.key, e.n, e.size)
	}
	return n, err
}

// ctxReader fails reads once ctx is done, so a cancelled Put stops
// consuming its input and never reaches its commit step.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// hashedPutReader is putReader, also hashed into h when o is create-only:
// a refused create-only put compares what it sent with what is there.
func hashedPutReader(ctx context.Context, key string, r io.Reader, size int64, o putOptions) (io.Reader, hash.Hash) {
	src := putReader(ctx, key, r, size)
	if !o.createOnly {
		return src, nil
	}
	h := sha256.New()
	return io.TeeReader(src, h), h
}

// putReader is the guarded reader every backend consumes.
func putReader(ctx context.Context, key string, r io.Reader, size int64) io.Reader {
	return &exactReader{r: ctxReader{ctx, r}, key: key, size: size}
}

package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

var (
	// ErrNotFound reports that a key holds no blob. It is returned for
	// genuine absence only; see the package documentation.
	ErrNotFound = errors.New("blob: not found")
	// ErrExists reports that a create-only Put found the key holding
	// different bytes.
	ErrExists = errors.New("blob: already exists")
	// ErrInvalidKey reports a key or prefix that ValidateKey refuses.
	ErrInvalidKey = errors.New("blob: invalid key")
	// ErrTooLarge reports a blob bigger than the caller of GetBytesMax
	// allows.
	ErrTooLarge = errors.New("blob: too large")
)

// Info describes one stored blob.
type Info struct {
	Key     string
	Size    int64 // bytes a Get returns (plaintext size for Encrypted stores)
	ModTime time.Time
}

// PutOption changes how Put writes.
type PutOption func(*putOptions)

type putOptions struct {
	createOnly bool
}

// CreateOnly makes Put refuse to replace a blob holding different bytes
// (ErrExists); re-putting identical bytes succeeds.
func CreateOnly() PutOption {
	return func(o *putOptions) { o.createOnly = true }
}

func applyPut(opts []PutOption) putOptions {
	var o putOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Store is a flat namespace of immutable-by-convention blobs. See the
// package documentation for the contract every implementation keeps.
type Store interface {
	// Put writes exactly size bytes from r to key (size < 0: unknown).
	Put(ctx context.Context, key string, r io.Reader, size int64, opts ...PutOption) error
	// Get streams the blob at key; the caller closes the reader.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat describes the blob at key.
	Stat(ctx context.Context, key string) (Info, error)
	// List returns every blob whose key starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Info, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Close releases the store's resources.
	Close() error
}

// PutBytes writes b to key.
func PutBytes(ctx context.Context, s Store, key string, b []byte, opts ...PutOption) error {
	return s.Put(ctx, key, bytes.NewReader(b), int64(len(b)), opts...)
}

// GetBytes reads the whole blob at key. Use GetBytesMax for a blob whose
// size is not already known to be sane.
func GetBytes(ctx context.Context, s Store, key string) ([]byte, error) {
	return GetBytesMax(ctx, s, key, -1)
}

// GetBytesMax reads the whole blob at key if it holds at most max bytes
// (max < 0: no limit). A bigger blob fails with ErrTooLarge as soon as
// byte max+1 arrives; the rest is never read, so a huge or endless object
// cannot exhaust memory.
func GetBytesMax(ctx context.Context, s Store, key string, max int64) ([]byte, error) {
	if r, ok := s.(bytesGetter); ok {
		return r.getBytes(ctx, key, max)
	}
	return readAll(ctx, s, key, max)
}

// bytesGetter is a Store that reads whole blobs its own way (WithRetry
// retries the read as one operation).
type bytesGetter interface {
	getBytes(ctx context.Context, key string, max int64) ([]byte, error)
}

func readAll(ctx context.Context, s Store, key string, max int64) ([]byte, error) {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var r io.Reader = rc
	if max >= 0 {
		r = io.LimitReader(rc, max+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if max >= 0 && int64(len(b)) > max {
		return nil, fmt.Errorf("%w: %q holds more than the %d bytes allowed; it was not read further", ErrTooLarge, key, max)
	}
	return b, nil
}

// checkCall refuses a call on a key ValidateKey refuses, or one whose
// context has ended (that error names op and key).
func checkCall(ctx context.Context, op, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blob: %s %q: %w", op, key, err)
	}
	return nil
}

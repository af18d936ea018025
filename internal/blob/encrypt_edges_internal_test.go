package blob

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// sizeRecorder remembers the size each Put declared.
type sizeRecorder struct {
	Store
	sizes []int64
}

func (s *sizeRecorder) Put(ctx context.Context, key string, r io.Reader, size int64, opts ...PutOption) error {
	s.sizes = append(s.sizes, size)
	return s.Store.Put(ctx, key, r, size, opts...)
}

// A put of a known size hands the inner store the exact ciphertext size,
// down to an empty plaintext (an unknown size would make an S3 upload
// stream in parts instead of one request of known length).
func TestPutDeclaresTheCipherSize(t *testing.T) {
	rec := &sizeRecorder{Store: NewMem()}
	s := encryptedOver(t, rec)
	for _, n := range []int{0, 1, 100} {
		if err := PutBytes(context.Background(), s, "k", make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		if got, want := rec.sizes[len(rec.sizes)-1], cipherSize(int64(n)); got != want {
			t.Errorf("a put of %d bytes declared %d to the inner store, want %d", n, got, want)
		}
	}
}

// A stored blob shorter than the format's magic is not an encrypted blob:
// reading it fails with ErrDecrypt saying so, not as a store failure.
func TestBlobShorterThanTheMagicIsNotEncrypted(t *testing.T) {
	ctx := context.Background()
	inner := NewMem()
	s := encryptedOver(t, inner)
	for _, raw := range []string{"T", "TBE"} {
		if err := PutBytes(ctx, inner, "k", []byte(raw)); err != nil {
			t.Fatal(err)
		}
		_, err := GetBytes(ctx, s, "k")
		if !errors.Is(err, ErrDecrypt) || !strings.Contains(err.Error(), "too short to be an encrypted blob") {
			t.Errorf("a stored blob of %d bytes: %v, want ErrDecrypt (too short)", len(raw), err)
		}
	}
}

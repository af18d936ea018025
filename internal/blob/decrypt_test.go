package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether-run/tether/internal/blob"
)

// The envelopes under testdata/v1 were written by the first encryption
// format (TBE1: a hand-made chunked AES-GCM envelope) before it was
// replaced, under the master key 0x5a×32, each at the blob key
// "fixtures/<name>". A store upgraded to the current format must still
// read them, byte for byte.
func TestV1EnvelopesStillDecrypt(t *testing.T) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{0x5a}, 32)
	for name, n := range map[string]int{"empty": 0, "small": 37, "two-chunks": 2*(64<<10) + 17} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "v1", name+".tbe1"))
			if err != nil {
				t.Fatal(err)
			}
			inner := blob.NewMem()
			k := "fixtures/" + name
			if err := inner.Put(ctx, k, bytes.NewReader(raw), int64(len(raw))); err != nil {
				t.Fatal(err)
			}
			s, err := blob.Encrypted(inner, key)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := s.Get(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, fixturePlain(n)) {
				t.Fatalf("%s: decrypted %d bytes that differ from the %d written", name, len(got), n)
			}
			in, err := s.Stat(ctx, k)
			if err != nil || in.Size != int64(n) {
				t.Fatalf("%s: Stat = %+v, %v; want size %d", name, in, err, n)
			}

			// Moved to another key, or under another master key, it
			// still fails as the old format always did.
			if err := inner.Put(ctx, k+"-moved", bytes.NewReader(raw), int64(len(raw))); err != nil {
				t.Fatal(err)
			}
			if _, err := readAll(s, k+"-moved"); !errors.Is(err, blob.ErrDecrypt) {
				t.Fatalf("%s moved to another key: %v, want ErrDecrypt", name, err)
			}
			other, _ := blob.Encrypted(inner, bytes.Repeat([]byte{1}, 32))
			if _, err := readAll(other, k); !errors.Is(err, blob.ErrDecrypt) {
				t.Fatalf("%s under another master key: %v, want ErrDecrypt", name, err)
			}
		})
	}
}

// FuzzDecrypt feeds arbitrary stored bytes to the decrypting reader: it
// must fail with ErrDecrypt (or, for a genuine envelope, succeed) and never
// panic or return unauthenticated bytes without an error at the end.
func FuzzDecrypt(f *testing.F) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{7}, 32)
	inner := blob.NewMem()
	enc, err := blob.Encrypted(inner, key)
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("ab"), 40000)} {
		if err := blob.PutBytes(ctx, enc, "k", p); err != nil {
			f.Fatal(err)
		}
		raw, _ := blob.GetBytes(ctx, inner, "k")
		f.Add(raw)
	}
	f.Add([]byte("TBE1"))
	f.Add([]byte("TBE2"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if err := blob.PutBytes(ctx, inner, "k", raw); err != nil {
			t.Fatal(err)
		}
		rc, err := enc.Get(ctx, "k")
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
		}
		if err != nil && !errors.Is(err, blob.ErrDecrypt) {
			t.Fatalf("undecryptable bytes gave %v, want ErrDecrypt", err)
		}
	})
}

func readAll(s blob.Store, k string) ([]byte, error) {
	rc, err := s.Get(context.Background(), k)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// fixturePlain is the plaintext every fixture of n bytes was made from.
func fixturePlain(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

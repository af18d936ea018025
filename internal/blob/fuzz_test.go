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

// FuzzKeyStaysInRoot checks that every key ValidateKey accepts lands
// inside the filesystem store's root, and that every key it refuses is
// refused by the store.
func FuzzKeyStaysInRoot(f *testing.F) {
	for _, k := range []string{"a", "a/b", "../a", "a/../../b", "a//b", ".x", "a/.", "runs/r/checkpoints/1.json", "a\x00b"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		base := t.TempDir()
		root := filepath.Join(base, "root")
		s, err := blob.OpenFS(root)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		verr := blob.ValidateKey(key)
		perr := blob.PutBytes(context.Background(), s, key, []byte("x"))
		if verr != nil {
			if !errors.Is(perr, blob.ErrInvalidKey) {
				t.Fatalf("key %q refused by ValidateKey (%v) but Put gave %v", key, verr, perr)
			}
			return
		}
		if perr != nil {
			t.Fatalf("Put(%q): %v", key, perr)
		}
		entries, _ := os.ReadDir(base)
		if len(entries) != 1 {
			t.Fatalf("key %q wrote outside the root: %v", key, entries)
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(key))); err != nil {
			t.Fatalf("key %q is not at its path: %v", key, err)
		}
	})
}

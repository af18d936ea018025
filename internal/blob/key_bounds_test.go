package blob_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-run/tether/internal/blob"
)

// The key and prefix length caps are inclusive, and a prefix may end in
// "/" (an empty last segment) but hold no empty segment before it.
func TestKeyAndPrefixBounds(t *testing.T) {
	longest := strings.Repeat(strings.Repeat("a", 99)+"/", blob.MaxKeyLen/100)
	longest += strings.Repeat("b", blob.MaxKeyLen-len(longest))
	if err := blob.ValidateKey(longest); err != nil {
		t.Fatalf("a key of exactly %d bytes: %v", blob.MaxKeyLen, err)
	}
	if err := blob.ValidateKey(longest + "b"); !errors.Is(err, blob.ErrInvalidKey) {
		t.Fatalf("a key of %d bytes: %v, want ErrInvalidKey", blob.MaxKeyLen+1, err)
	}
	s := blob.NewMem()
	ctx := context.Background()
	if _, err := s.List(ctx, longest); err != nil {
		t.Fatalf("List of a prefix of exactly %d bytes: %v", blob.MaxKeyLen, err)
	}
	if _, err := s.List(ctx, longest+"b"); !errors.Is(err, blob.ErrInvalidKey) {
		t.Fatalf("List of a prefix of %d bytes: %v, want ErrInvalidKey", blob.MaxKeyLen+1, err)
	}
	if _, err := s.List(ctx, "a/"); err != nil {
		t.Fatalf("List(a/): %v", err)
	}
	if _, err := s.List(ctx, "a//"); !errors.Is(err, blob.ErrInvalidKey) {
		t.Fatalf("List(a//) = %v, want ErrInvalidKey", err)
	}
}

// A put whose reader gives fewer or more bytes than declared fails; one
// whose reader gives exactly the declared bytes, then io.EOF, succeeds,
// down to a declared size of 0.
func TestPutChecksTheDeclaredSize(t *testing.T) {
	ctx := context.Background()
	s := blob.NewMem()
	for _, c := range []struct {
		body string
		size int64
		ok   bool
	}{{"abc", 3, true}, {"", 0, true}, {"ab", 3, false}, {"abcd", 3, false}, {"a", 0, false}} {
		err := s.Put(ctx, "k/"+c.body+"x", bytes.NewReader([]byte(c.body)), c.size)
		if (err == nil) != c.ok {
			t.Errorf("Put of %d bytes declared as %d: %v", len(c.body), c.size, err)
		}
	}
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

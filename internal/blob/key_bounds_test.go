package blob_test

import (
	"bytes"
	"context"
	"errors"
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

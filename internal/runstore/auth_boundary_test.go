package runstore

import (
	"bytes"
	"testing"
)

// A sealed empty body is exactly a MAC header long: it unseals to the
// empty body, and one byte less is a malformed header, not an empty body.
func TestUnsealAtTheHeaderLength(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	sealed := Seal(key, "r1", 1, nil)
	if len(sealed) != headerLen {
		t.Fatalf("a sealed empty body is %d bytes, want the header's %d", len(sealed), headerLen)
	}
	body, err := Unseal(key, "r1", 1, sealed)
	if err != nil || len(body) != 0 {
		t.Fatalf("Unseal(sealed empty body) = %q, %v; want an empty body", body, err)
	}
	if _, err := Unseal(key, "r1", 1, sealed[:headerLen-1]); err == nil {
		t.Fatal("a header one byte short was accepted")
	}
}

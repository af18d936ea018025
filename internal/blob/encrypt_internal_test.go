package blob

import (
	"bytes"
	"context"
	"testing"
)

// cipherSize must be what the stream really writes, and plainSize must
// invert it exactly, at every segment boundary.
func TestEnvelopeSizes(t *testing.T) {
	ctx := context.Background()
	inner := NewMem()
	s := encryptedOver(t, inner)
	for _, n := range []int64{0, 1, firstPlain - 1, firstPlain, firstPlain + 1, firstPlain + restPlain, firstPlain + restPlain + 1, 3*restPlain + 17} {
		if err := PutBytes(ctx, s, "k", make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		raw, _ := GetBytes(ctx, inner, "k")
		if c := cipherSize(n); int64(len(raw)) != c {
			t.Errorf("a plaintext of %d bytes is stored as %d, cipherSize says %d", n, len(raw), c)
		}
	}
	for _, n := range []int64{0, 1, firstPlain, firstPlain + 1, firstPlain + restPlain - 1, firstPlain + restPlain, firstPlain + 2*restPlain, restPlain, 2 * restPlain, 2*restPlain + 17, 64 << 20, 64<<20 + 1} {
		c := cipherSize(n)
		got, ok := plainSize(c)
		if !ok || got != n {
			t.Errorf("plainSize(cipherSize(%d)=%d) = %d, %v", n, c, got, ok)
		}
	}
	for _, c := range []int64{0, prefixLen + streamHdrLen, prefixLen + streamHdrLen + tagLen - 1, cipherSize(firstPlain) + 1, cipherSize(firstPlain) + tagLen,
		// A last segment of only a tag, after two and after three full ones.
		cipherSize(firstPlain+restPlain) + tagLen, cipherSize(firstPlain+2*restPlain) + tagLen} {
		if n, ok := plainSize(c); ok {
			t.Errorf("plainSize(%d) = %d, want impossible", c, n)
		}
	}
}

// List reads no blob, so it sizes a TBE1 envelope by the current format;
// the doc comment on List promises how far off that can be.
func TestListSizeOfV1Envelopes(t *testing.T) {
	worst := int64(0)
	for n := int64(0); n < 5*v1Chunk; n++ {
		chunks := max(1, (n+v1Chunk-1)/v1Chunk)
		c := int64(v1HdrLen) + n + chunks*v1TagLen
		if got, ok := plainSize(c); ok {
			worst = max(worst, got-n, n-got)
		}
	}
	if worst > 20 {
		t.Fatalf("a v1 envelope is listed up to %d bytes off; List's comment says at most 20", worst)
	}
}

// encryptedOver is an encrypting store over inner, under the master key
// 0x03×32.
func encryptedOver(t *testing.T, inner Store) Store {
	t.Helper()
	s, err := Encrypted(inner, bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

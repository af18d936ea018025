package blob

import "testing"

// plainSize must invert cipherSize exactly, at every chunk boundary.
func TestEnvelopeSizes(t *testing.T) {
	for _, n := range []int64{0, 1, encChunk - 1, encChunk, encChunk + 1, 2 * encChunk, 2*encChunk + 17, 64 << 20, 64<<20 + 1} {
		c := cipherSize(n)
		got, ok := plainSize(c)
		if !ok || got != n {
			t.Errorf("plainSize(cipherSize(%d)=%d) = %d, %v", n, c, got, ok)
		}
	}
	for _, c := range []int64{0, int64(encHdrLen), int64(encHdrLen + encTagLen - 1), int64(encHdrLen + encChunk + encTagLen + 5)} {
		if n, ok := plainSize(c); ok {
			t.Errorf("plainSize(%d) = %d, want impossible", c, n)
		}
	}
}

package blob_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"testing"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/testenv"
)

// cycleReader yields n bytes by repeating a random buffer, so that the
// benchmark measures the store and not a generator.
type cycleReader struct {
	buf []byte
	n   int64
	off int
}

func (c *cycleReader) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	k := copy(p, c.buf[c.off:])
	c.off = (c.off + k) % len(c.buf)
	c.n -= int64(k)
	return k, nil
}

// BenchmarkStore reports Put and Get throughput (MB/s) of 1 MiB and
// 64 MiB blobs on the filesystem and on versitygw over loopback, in the
// clear and encrypted. Run: go test -run '^$' -bench Store ./internal/blob/
func BenchmarkStore(b *testing.B) {
	pattern := make([]byte, 1<<20)
	rand.Read(pattern)
	backends := []struct {
		name string
		open func(b *testing.B) blob.Store
	}{
		{"fs", func(b *testing.B) blob.Store { return openFS(b, b.TempDir()) }},
		{"s3", func(b *testing.B) blob.Store {
			srv := testenv.VersityGW(b)
			return openURL(b, srv.URL("bench"), blob.WithCredentials(srv.Credentials()))
		}},
	}
	for _, be := range backends {
		for _, encrypted := range []bool{false, true} {
			name := be.name
			if encrypted {
				name += "-encrypted"
			}
			b.Run(name, func(b *testing.B) {
				s := be.open(b)
				defer s.Close()
				if encrypted {
					var err error
					if s, err = blob.Encrypted(s, bytes.Repeat([]byte{1}, 32)); err != nil {
						b.Fatal(err)
					}
				}
				ctx := context.Background()
				for _, size := range []int64{1 << 20, 64 << 20} {
					key := fmt.Sprintf("bench/%d", size)
					b.Run(fmt.Sprintf("Put/%dMiB", size>>20), func(b *testing.B) {
						b.SetBytes(size)
						for b.Loop() {
							if err := s.Put(ctx, key, &cycleReader{buf: pattern, n: size}, size); err != nil {
								b.Fatal(err)
							}
						}
					})
					b.Run(fmt.Sprintf("Get/%dMiB", size>>20), func(b *testing.B) {
						b.SetBytes(size)
						for b.Loop() {
							rc, err := s.Get(ctx, key)
							if err != nil {
								b.Fatal(err)
							}
							if _, err := io.Copy(io.Discard, rc); err != nil {
								b.Fatal(err)
							}
							rc.Close()
						}
					})
				}
			})
		}
	}
}

package storetest

import (
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"runtime"
)

// genReader produces n deterministic pseudo-random bytes from a seed
// without holding them: the suite streams blobs larger than it could
// afford to keep and compares digests instead.
type genReader struct {
	rng  *rand.ChaCha8
	left int64
	read int64
	// at, if set, is called when the stream has produced at least atOff
	// bytes, once, before the bytes past atOff are returned.
	atOff int64
	at    func()
}

func newGen(seed byte, n int64) *genReader {
	var s [32]byte
	s[0] = seed
	return &genReader{rng: rand.NewChaCha8(s), left: n, atOff: -1}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	if g.at != nil && g.read+int64(len(p)) > g.atOff {
		if g.read >= g.atOff {
			f := g.at
			g.at = nil
			f()
		} else {
			p = p[:g.atOff-g.read]
		}
	}
	n, _ := g.rng.Read(p)
	g.left -= int64(n)
	g.read += int64(n)
	return n, nil
}

// digest returns the SHA-256 of the n bytes newGen(seed, n) produces.
func digest(seed byte, n int64) []byte {
	h := sha256.New()
	io.Copy(h, newGen(seed, n))
	return h.Sum(nil)
}

// heapProbe records the largest live heap seen at its checkpoints. The
// garbage collector runs first, so only memory still referenced counts:
// a backend that buffered the whole blob would show it here.
type heapProbe struct {
	base, peak uint64
}

func newHeapProbe() *heapProbe {
	p := &heapProbe{}
	p.base = liveHeap()
	return p
}

func (p *heapProbe) sample() {
	if h := liveHeap(); h > p.peak {
		p.peak = h
	}
}

// growth is how far the live heap rose above the baseline.
func (p *heapProbe) growth() int64 { return int64(p.peak) - int64(p.base) }

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// probingReader calls probe each time another `every` bytes have passed.
type probingReader struct {
	r     io.Reader
	every int64
	next  int64
	n     int64
	probe func()
}

func (p *probingReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	if p.n >= p.next {
		p.probe()
		p.next += p.every
	}
	return n, err
}

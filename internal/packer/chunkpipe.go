package packer

import (
	"io"
	"sync"
)

// chunkPipe is a pipe with a buffer: the writer hands over chunks of
// chunkBytes and runs up to chunksAhead of them ahead of the reader, so
// the assembly of a chain (decompression, hashing) and its extraction
// (checks, file writes) run at the same time. io.Pipe hands every write
// over synchronously, which keeps one of them idle while the other works.
type chunkPipe struct {
	ch     chan []byte
	done   chan struct{} // closed when the reader stops
	stop   sync.Once
	werr   error // the writer's close, published by closing ch
	pend   []byte
	cur    []byte
	closed bool // a write failed because the reader had stopped
}

const (
	chunkBytes  = 256 << 10
	chunksAhead = 8
)

func newChunkPipe() *chunkPipe {
	return &chunkPipe{ch: make(chan []byte, chunksAhead), done: make(chan struct{})}
}

// Write is the writer's end (one goroutine).
func (p *chunkPipe) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if p.pend == nil {
			p.pend = make([]byte, 0, chunkBytes)
		}
		k := min(len(b), chunkBytes-len(p.pend))
		p.pend, b = append(p.pend, b[:k]...), b[k:]
		if len(p.pend) == chunkBytes {
			if err := p.send(); err != nil {
				return n - len(b) - k, err
			}
		}
	}
	return n, nil
}

func (p *chunkPipe) send() error {
	select {
	case <-p.done:
		p.closed = true
		return io.ErrClosedPipe
	default:
	}
	select {
	case p.ch <- p.pend:
		p.pend = nil
		return nil
	case <-p.done:
		p.closed = true
		return io.ErrClosedPipe
	}
}

// CloseWrite ends the stream: the reader sees err after what was
// written, or io.EOF when err is nil.
func (p *chunkPipe) CloseWrite(err error) {
	if err == nil && len(p.pend) > 0 {
		err = p.send()
	}
	p.werr = err
	close(p.ch)
}

// Read is the reader's end (one goroutine).
func (p *chunkPipe) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		select {
		case c, ok := <-p.ch:
			if !ok {
				if p.werr != nil {
					return 0, p.werr
				}
				return 0, io.EOF
			}
			p.cur = c
		case <-p.done:
			return 0, io.ErrClosedPipe
		}
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// CloseRead stops the reader: a writer blocked on a full pipe, or writing
// later, fails with io.ErrClosedPipe.
func (p *chunkPipe) CloseRead() {
	p.stop.Do(func() { close(p.done) })
}

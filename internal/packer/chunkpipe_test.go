package packer

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChunkPipeCarriesEveryByteInOrder(t *testing.T) {
	data := make([]byte, 3*chunkBytes+12345)
	rng := rand.New(rand.NewChaCha8([32]byte{7}))
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	p := newChunkPipe()
	go func() {
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(100<<10))
			if _, err := p.Write(rest[:n]); err != nil {
				p.CloseWrite(err)
				return
			}
			rest = rest[n:]
		}
		p.CloseWrite(nil)
	}()
	got, err := io.ReadAll(p)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, got))
}

func TestChunkPipeCarriesTheWritersFailure(t *testing.T) {
	p := newChunkPipe()
	broken := errors.New("broken chain")
	go func() {
		_, _ = p.Write([]byte("some bytes"))
		p.CloseWrite(broken)
	}()
	got, err := io.ReadAll(p)
	assert.ErrorIs(t, err, broken, "a failing writer's bytes are not flushed as if whole")
	assert.Empty(t, got)
}

func TestChunkPipeStopsTheWriterWhenTheReaderStops(t *testing.T) {
	p := newChunkPipe()
	done := make(chan error, 1)
	go func() {
		chunk := make([]byte, chunkBytes)
		for {
			if _, err := p.Write(chunk); err != nil {
				done <- err
				return
			}
		}
	}()
	buf := make([]byte, 10)
	_, err := p.Read(buf)
	require.NoError(t, err)
	p.CloseRead()
	assert.ErrorIs(t, <-done, io.ErrClosedPipe, "a writer running ahead of a stopped reader is released")
	assert.True(t, p.closed)
}

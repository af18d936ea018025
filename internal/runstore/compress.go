package runstore

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// A checkpoint is stored as one zstd frame of its JSON. A long run's
// checkpoints are mostly its recent path and its graph, text that
// compresses about ten times, and a run leaves one per visit.

// ErrCorruptCheckpoint reports a stored checkpoint body that is neither
// JSON nor a whole zstd frame of at most MaxCheckpointBytes: it was cut
// short, damaged, or not written by tether. It is never a not-found.
var ErrCorruptCheckpoint = errors.New("runstore: checkpoint object is damaged")

// zstdMagic starts every zstd frame. A checkpoint stored before
// checkpoints were compressed is bare JSON and starts with '{', so the
// two never look alike.
var zstdMagic = []byte{0x28, 0xB5, 0x2F, 0xFD}

// checkpointLevel is the zstd level checkpoints are written at.
// BenchmarkCheckpointCompression measures both candidates on a 200-step
// checkpoint of 30,356 bytes of JSON: SpeedFastest stores 5,512 bytes,
// SpeedDefault 5,461 (1% less) for about a third more time (55 against
// 70 µs on an idle core), and the JSON encoding costs more than either.
const checkpointLevel = zstd.SpeedFastest

// The encoder and decoder are made once: each holds megabytes of tables.
// Both are safe for concurrent use; with a concurrency of one, concurrent
// saves take turns, which costs microseconds per checkpoint.
var (
	encoder = must(zstd.NewWriter(nil,
		zstd.WithEncoderLevel(checkpointLevel),
		zstd.WithEncoderConcurrency(1),
		// A single-segment frame always states its content size, even
		// below 256 bytes, which Decompress requires.
		zstd.WithSingleSegment(true)))
	decoder = must(zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(MaxCheckpointBytes),
		// DecodeAll then never grows the buffer Decompress sizes from the
		// frame header, so a frame that lies about its size cannot
		// allocate past it.
		zstd.WithDecodeAllCapLimit(true)))
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err) // the options are constants
	}
	return v
}

// Compress returns the stored body of checkpoint JSON plain: one zstd
// frame that states its content size.
func Compress(plain []byte) []byte {
	return encoder.EncodeAll(plain, make([]byte, 0, len(plain)/4))
}

// Decompress returns the checkpoint JSON of a stored body: the body
// itself when it is bare JSON (written before checkpoints were
// compressed), the content of its zstd frame otherwise. The body comes
// from an untrusted bucket: a frame that does not state its size, or
// states more than MaxCheckpointBytes, is refused before anything is
// allocated for it, and one that decodes to anything but the size it
// states is refused too (ErrCorruptCheckpoint).
func Decompress(body []byte) ([]byte, error) {
	if len(body) > 0 && body[0] == '{' {
		return body, nil
	}
	if !bytes.HasPrefix(body, zstdMagic) {
		return nil, fmt.Errorf("%w: it is neither JSON nor a zstd frame", ErrCorruptCheckpoint)
	}
	var h zstd.Header
	if err := h.Decode(body); err != nil {
		return nil, fmt.Errorf("%w: zstd frame header: %v", ErrCorruptCheckpoint, err)
	}
	if !h.HasFCS {
		return nil, fmt.Errorf("%w: the zstd frame does not state its size, which every checkpoint tether writes does", ErrCorruptCheckpoint)
	}
	if h.FrameContentSize > MaxCheckpointBytes {
		return nil, fmt.Errorf("%w: the zstd frame would decompress to %d bytes, more than the %d a checkpoint may hold", ErrCorruptCheckpoint, h.FrameContentSize, MaxCheckpointBytes)
	}
	plain, err := decoder.DecodeAll(body, make([]byte, 0, h.FrameContentSize))
	if err != nil {
		return nil, fmt.Errorf("%w: zstd: %v", ErrCorruptCheckpoint, err)
	}
	if uint64(len(plain)) != h.FrameContentSize {
		return nil, fmt.Errorf("%w: the zstd frame decompressed to %d bytes, not the %d it states", ErrCorruptCheckpoint, len(plain), h.FrameContentSize)
	}
	return plain, nil
}

package runstore

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// A checkpoint is stored as one gzip member of its JSON. A long run's
// checkpoints are mostly its recent path and its graph, text that
// compresses about five times, and a run leaves one per visit. The
// standard library's gzip keeps the run store's types, which graph
// validation and session resolution import, free of a compression module.

// ErrCorruptCheckpoint reports a stored checkpoint body that is neither
// JSON nor one whole gzip member of at most MaxCheckpointBytes: it was cut
// short, damaged, or not written by tether. It is never a not-found.
var ErrCorruptCheckpoint = errors.New("runstore: checkpoint object is damaged")

// gzipMagic starts every gzip member (with the deflate method). A
// checkpoint stored before checkpoints were compressed is bare JSON and
// starts with '{', so the two never look alike.
var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// writers are reused: a gzip writer holds several hundred KB of tables.
var writers = sync.Pool{New: func() any {
	w, err := gzip.NewWriterLevel(io.Discard, checkpointLevel)
	if err != nil {
		panic(err) // the level is a constant
	}
	return w
}}

// checkpointLevel is the level checkpoints are written at: on a 200-step
// checkpoint (BenchmarkCheckpointCompression) the fastest stores within a
// few percent of the default, in less time than the JSON encoding takes.
const checkpointLevel = gzip.BestSpeed

// Compress returns the stored body of checkpoint JSON plain: one gzip
// member.
func Compress(plain []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(plain)/4 + 64)
	w := writers.Get().(*gzip.Writer)
	defer writers.Put(w)
	w.Reset(&buf)
	// Writes to a bytes.Buffer do not fail.
	_, _ = w.Write(plain)
	_ = w.Close()
	return buf.Bytes()
}

// Decompress returns the checkpoint JSON of a stored body: the body
// itself when it is bare JSON (written before checkpoints were
// compressed), the content of its gzip member otherwise. The body comes
// from an untrusted bucket: the size a member states in its trailer must
// be at most MaxCheckpointBytes, nothing past that size is ever read or
// allocated, and a member that decodes to anything else, fails its CRC,
// or is followed by more data is refused (ErrCorruptCheckpoint).
func Decompress(body []byte) ([]byte, error) {
	return decompressMax(body, MaxCheckpointBytes)
}

// decompressMax is Decompress for a body that may hold at most limit
// bytes of JSON.
func decompressMax(body []byte, limit int64) ([]byte, error) {
	if len(body) > 0 && body[0] == '{' {
		return body, nil
	}
	if !bytes.HasPrefix(body, gzipMagic) {
		return nil, fmt.Errorf("%w: it is neither JSON nor a gzip member", ErrCorruptCheckpoint)
	}
	if len(body) < 18 {
		return nil, fmt.Errorf("%w: %d bytes is too short for a gzip member", ErrCorruptCheckpoint, len(body))
	}
	// ISIZE, the last four bytes, is the size modulo 2^32: a hint to size
	// the buffer and to stop reading, checked against what decodes.
	size := int64(binary.LittleEndian.Uint32(body[len(body)-4:]))
	if size > limit {
		return nil, fmt.Errorf("%w: the gzip member would decompress to %d bytes, more than the %d it may hold", ErrCorruptCheckpoint, size, limit)
	}
	src := bytes.NewReader(body)
	r, err := gzip.NewReader(src)
	if err != nil {
		return nil, fmt.Errorf("%w: gzip header: %v", ErrCorruptCheckpoint, err)
	}
	r.Multistream(false)
	plain := make([]byte, size)
	if _, err := io.ReadFull(r, plain); err != nil {
		return nil, fmt.Errorf("%w: the gzip member does not decompress to the %d bytes it states: %v", ErrCorruptCheckpoint, size, err)
	}
	// One more read must meet the end, which checks the trailer (CRC and
	// size); a member that goes on is refused unread.
	var more [1]byte
	if n, err := io.ReadFull(r, more[:]); n != 0 || !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("it decompresses to more")
		}
		return nil, fmt.Errorf("%w: the gzip member is not the %d bytes it states: %v", ErrCorruptCheckpoint, size, err)
	}
	if src.Len() != 0 {
		return nil, fmt.Errorf("%w: %d bytes follow the gzip member", ErrCorruptCheckpoint, src.Len())
	}
	return plain, nil
}

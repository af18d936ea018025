package packer

import (
	"crypto/sha256"
	"encoding"
	"fmt"
	"hash"
	"io"
	"os"
)

// A delta is packed at a cost that does not grow with the file it extends.
// Proving that a 50 MB transcript only grew would mean hashing its 50 MB
// on every visit; instead the manifest keeps, for each file, the sha256
// state after its last byte (so the new sum hashes only what was
// appended) and the sha256 of a fixed sample of its bytes: the first and
// the last 64 KiB and eight 4 KiB windows spread between them. PackDelta
// takes a file to have only grown when it is no shorter and that sample of
// its first Size bytes is unchanged; otherwise it hashes the whole file, as
// it does when the manifest has no state. The CLIs append to their session
// files, and a compaction rewrites the head or the end of one, both of
// which the sample covers. UnpackParts still checks every link of a chain
// against the whole bytes it assembles.

const (
	sampleEdge    = 64 << 10 // the head and the tail
	sampleWindow  = 4 << 10  // each window between them
	sampleWindows = 8
)

// sampleSpans returns the byte ranges of a file of size bytes that its
// sample covers, in order and without overlaps.
func sampleSpans(size int64) [][2]int64 {
	var spans [][2]int64
	add := func(from, to int64) {
		from, to = max(from, 0), min(to, size)
		if from >= to {
			return
		}
		if n := len(spans); n > 0 && from <= spans[n-1][1] {
			spans[n-1][1] = max(spans[n-1][1], to)
			return
		}
		spans = append(spans, [2]int64{from, to})
	}
	add(0, sampleEdge)
	for k := int64(1); k <= sampleWindows; k++ {
		at := k * size / (sampleWindows + 1)
		add(at, at+sampleWindow)
	}
	add(size-sampleEdge, size)
	return spans
}

// sampleAt is the sample of the first size bytes of r.
func sampleAt(r io.ReaderAt, size int64) (string, error) {
	h := sha256.New()
	for _, s := range sampleSpans(size) {
		n, err := io.Copy(h, io.NewSectionReader(r, s[0], s[1]-s[0]))
		if err != nil {
			return "", err
		}
		if n != s[1]-s[0] {
			return "", io.EOF // the file is shorter than size
		}
	}
	return hexSum(h), nil
}

// sampler computes the sample of a file of a known size from its bytes
// written in order, for a file that is streamed rather than read.
type sampler struct {
	h     hash.Hash
	spans [][2]int64
	at    int64
}

func newSampler(size int64) *sampler {
	return &sampler{h: sha256.New(), spans: sampleSpans(size)}
}

func (s *sampler) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && len(s.spans) > 0 {
		sp := s.spans[0]
		switch {
		case s.at >= sp[1]:
			s.spans = s.spans[1:]
			continue
		case s.at < sp[0]:
			skip := min(int64(len(p)), sp[0]-s.at)
			p, s.at = p[skip:], s.at+skip
			continue
		}
		take := min(int64(len(p)), sp[1]-s.at)
		s.h.Write(p[:take])
		p, s.at = p[take:], s.at+take
	}
	s.at += int64(len(p))
	return n, nil
}

func (s *sampler) sum() string { return hexSum(s.h) }

// hashState is the sha256 state of h, from which a later pack hashes only
// what follows.
func hashState(h hash.Hash) []byte {
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil // the next pack hashes the whole file
	}
	return state
}

// grownSum reports whether the open file f, of size bytes, is the file was
// describes with bytes appended, judged by its sample, and if so returns
// its state, hashing only the appended bytes. ok is false when the
// manifest has no state or the sample differs: the caller hashes the
// whole file.
func grownSum(f *os.File, size int64, was FileState) (st FileState, ok bool, err error) {
	if was.State == nil || was.Sample == "" || was.Size > size {
		return FileState{}, false, nil
	}
	got, err := sampleAt(f, was.Size)
	if err != nil || got != was.Sample {
		return FileState{}, false, err
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(was.State); err != nil {
		return FileState{}, false, nil
	}
	n, err := io.Copy(h, io.NewSectionReader(f, was.Size, size-was.Size))
	if err != nil {
		return FileState{}, false, err
	}
	if n != size-was.Size {
		return FileState{}, false, fmt.Errorf("packer: %s shrank while being packed; pack again once the CLI has exited", f.Name())
	}
	sample := was.Sample // unchanged: the same bytes at the same windows
	if size != was.Size {
		if sample, err = sampleAt(f, size); err != nil {
			return FileState{}, false, err
		}
	}
	return FileState{Size: size, SHA256: hexSum(h), State: hashState(h), Sample: sample}, true, nil
}

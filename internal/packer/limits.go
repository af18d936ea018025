package packer

import (
	"fmt"
	"strings"
)

// Default caps, applied to every field of Limits left zero.
const (
	DefaultMaxTotalBytes int64 = 512 << 20
	DefaultMaxFiles            = 10_000
	DefaultMaxFileBytes  int64 = 256 << 20
	// DefaultMaxDepth caps the components of a path below the state root.
	// A Claude Code subagent transcript is 5 deep
	// (projects/<slug>/<id>/subagents/<file>).
	DefaultMaxDepth = 64
	// DefaultMaxPathBytes is Linux's PATH_MAX.
	DefaultMaxPathBytes = 4096
)

// Limits caps what one session archive may hold. They apply when packing
// (a session over them is refused rather than shipped) and when unpacking
// (before any byte is written). A zero or negative field means its default.
type Limits struct {
	// MaxTotalBytes caps the sum of the regular files' sizes, uncompressed.
	MaxTotalBytes int64
	// MaxFiles caps the number of entries, files and directories together,
	// counting the directories an entry implies without listing them.
	MaxFiles int
	// MaxFileBytes caps any single file, uncompressed.
	MaxFileBytes int64
	// MaxDepth caps the number of components of any path, in the archive
	// and relative to the state root.
	MaxDepth int
	// MaxPathBytes caps the length of any path, in the archive and
	// relative to the state root.
	MaxPathBytes int
}

// DefaultLimits returns the defaults: 512 MiB in total, 10,000 entries,
// 256 MiB for a single file, paths at most 64 components and 4,096 bytes.
func DefaultLimits() Limits {
	return Limits{
		MaxTotalBytes: DefaultMaxTotalBytes,
		MaxFiles:      DefaultMaxFiles,
		MaxFileBytes:  DefaultMaxFileBytes,
		MaxDepth:      DefaultMaxDepth,
		MaxPathBytes:  DefaultMaxPathBytes,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxPathBytes <= 0 {
		l.MaxPathBytes = d.MaxPathBytes
	}
	return l
}

// checkPath refuses a slash-separated path over MaxPathBytes or MaxDepth.
// It looks at the length first, so a huge name costs no more than that.
func (l Limits) checkPath(p string) error {
	if len(p) > l.MaxPathBytes {
		return fmt.Errorf("%w: a path of %d bytes (%.40q…) is over the %d-byte limit", ErrTooDeep, len(p), p, l.MaxPathBytes)
	}
	if d := strings.Count(p, "/") + 1; d > l.MaxDepth {
		return fmt.Errorf("%w: %.80q… is %d components deep, over the limit of %d", ErrTooDeep, p, d, l.MaxDepth)
	}
	return nil
}

// MaxBlobBytes is the largest blob an archive within these limits can be.
// A caller reading a session blob from a store caps the read at it (for
// example with blob.GetBytesMax), so a huge object is refused before it is
// held in memory.
func (l Limits) MaxBlobBytes() int64 {
	return l.withDefaults().maxBlobBytes()
}

// maxStreamBytes caps the decompressed tar stream: the files plus tar headers
// (a path of MaxPathBytes costs a PAX header of about that much plus two
// 512-byte blocks) and the end-of-archive blocks. It stops a compression
// bomb made of headers rather than contents.
func (l Limits) maxStreamBytes() int64 {
	return l.MaxTotalBytes + int64(l.MaxFiles)*(int64(l.MaxPathBytes)+2048) + 1<<20
}

// maxBlobBytes caps the compressed blob; zstd never expands data by more than
// a tiny fraction, so a blob bigger than the stream cap cannot be ours.
func (l Limits) maxBlobBytes() int64 {
	return l.maxStreamBytes() + int64(maxHeaderBytes+prefixLen)
}

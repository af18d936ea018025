package archive

import "github.com/tether-run/tether/internal/treepolicy"

// Default caps of a session archive, applied to every field of Limits
// left zero.
const (
	DefaultMaxTotalBytes int64 = 512 << 20
	DefaultMaxFiles            = 10_000
	DefaultMaxFileBytes  int64 = 256 << 20
	// DefaultMaxDepth caps the directories on the way to a path below the
	// state root.
	DefaultMaxDepth = 64
	// DefaultMaxPathBytes is Linux's PATH_MAX.
	DefaultMaxPathBytes = 4096
)

// Limits caps what one session archive may hold: the one limits type of
// every untrusted tree (treepolicy.Limits), with a session's defaults. A
// zero or negative field means its default.
type Limits = treepolicy.Limits

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

// WithDefaults fills the zero fields of l from DefaultLimits.
func WithDefaults(l Limits) Limits { return l.Or(DefaultLimits()) }

// MaxStreamBytes caps the decompressed tar stream of an archive within l
// (its defaults filled): the files plus tar headers (a path of
// MaxPathBytes costs a PAX header of about that much plus two 512-byte
// blocks) and the end-of-archive blocks. It stops a compression bomb made
// of headers rather than contents.
func MaxStreamBytes(l Limits) int64 {
	return l.MaxTotalBytes + int64(l.MaxFiles)*(int64(l.MaxPathBytes)+2048) + 1<<20
}

// MaxBlobBytes is the largest blob an archive within l (its defaults
// filled) can be: zstd never expands data by more than a tiny fraction, so
// a blob bigger than the stream cap cannot be ours. A caller reading a
// session blob from a store caps the read at it, so a huge object is
// refused before it is held in memory.
func MaxBlobBytes(l Limits) int64 {
	return MaxStreamBytes(l) + int64(MaxHeaderBytes+PrefixBytes)
}

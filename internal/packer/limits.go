package packer

// Default caps, applied to every field of Limits left zero.
const (
	DefaultMaxTotalBytes int64 = 512 << 20
	DefaultMaxFiles            = 10_000
	DefaultMaxFileBytes  int64 = 256 << 20
)

// Limits caps what one session archive may hold. They apply when packing
// (a session over them is refused rather than shipped) and when unpacking
// (before any byte is written). A zero or negative field means its default.
type Limits struct {
	// MaxTotalBytes caps the sum of the regular files' sizes, uncompressed.
	MaxTotalBytes int64
	// MaxFiles caps the number of entries, files and directories together.
	MaxFiles int
	// MaxFileBytes caps any single file, uncompressed.
	MaxFileBytes int64
}

// DefaultLimits returns the defaults: 512 MiB in total, 10,000 entries,
// 256 MiB for a single file.
func DefaultLimits() Limits {
	return Limits{
		MaxTotalBytes: DefaultMaxTotalBytes,
		MaxFiles:      DefaultMaxFiles,
		MaxFileBytes:  DefaultMaxFileBytes,
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
	return l
}

// maxStreamBytes caps the decompressed tar stream: the files plus tar headers
// (a long name costs a PAX header, about 1.5 KiB) and the end-of-archive
// blocks. It stops a compression bomb made of headers rather than contents.
func (l Limits) maxStreamBytes() int64 {
	return l.MaxTotalBytes + int64(l.MaxFiles)*4096 + 1<<20
}

// maxBlobBytes caps the compressed blob; zstd never expands data by more than
// a tiny fraction, so a blob bigger than the stream cap cannot be ours.
func (l Limits) maxBlobBytes() int64 {
	return l.maxStreamBytes() + int64(maxHeaderBytes+prefixLen)
}

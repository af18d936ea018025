package workspace

// Defaults of Limits; each can be changed with the TETHER_WORKSPACE_*
// variable named in Limits.
const (
	DefaultMaxFiles      = 100_000
	DefaultMaxTotalBytes = 4 << 30
	DefaultMaxFileBytes  = 256 << 20
	DefaultMaxDepth      = 64
	DefaultMaxPathBytes  = 4096
)

// Limits bound what one snapshot may hold. They apply when snapshotting (a
// workspace over them fails the snapshot with ErrTooLarge, naming the
// limit and how to raise it) and when restoring (before anything is
// written). A zero field means its default.
type Limits struct {
	// MaxFiles caps the files (TETHER_WORKSPACE_MAX_FILES).
	MaxFiles int
	// MaxTotalBytes caps the sum of the files' sizes
	// (TETHER_WORKSPACE_MAX_BYTES).
	MaxTotalBytes int64
	// MaxFileBytes caps one file (TETHER_WORKSPACE_MAX_FILE_BYTES).
	MaxFileBytes int64
	// MaxDepth caps the directories on the way to a file
	// (TETHER_WORKSPACE_MAX_DEPTH).
	MaxDepth int
	// MaxPathBytes caps a file's path inside the workspace.
	MaxPathBytes int
}

// DefaultLimits returns the defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxFiles:      DefaultMaxFiles,
		MaxTotalBytes: DefaultMaxTotalBytes,
		MaxFileBytes:  DefaultMaxFileBytes,
		MaxDepth:      DefaultMaxDepth,
		MaxPathBytes:  DefaultMaxPathBytes,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
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

// maxObjectBytes caps a tree or commit object: far above any real one
// (a tree of 100,000 entries is ~5 MB), far below a memory bomb.
const maxObjectBytes = 64 << 20

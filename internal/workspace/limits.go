package workspace

import "github.com/tether-run/tether/internal/treepolicy"

// Defaults of Limits; each can be changed with the TETHER_WORKSPACE_*
// variable named in Limits.
const (
	DefaultMaxFiles      = 100_000
	DefaultMaxTotalBytes = 4 << 30
	DefaultMaxFileBytes  = 256 << 20
	DefaultMaxDepth      = 64
	DefaultMaxPathBytes  = 4096
)

// Limits bound what one snapshot may hold: the one limits type of every
// untrusted tree (treepolicy.Limits, whose fields name the
// TETHER_WORKSPACE_* variables), with a workspace's defaults. They apply
// when snapshotting (a workspace over them fails the snapshot with
// ErrTooLarge, naming the limit and how to raise it) and when restoring
// (before anything is written). A zero field means its default.
type Limits = treepolicy.Limits

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

// withDefaults fills the zero fields of l from DefaultLimits.
func withDefaults(l Limits) Limits { return l.Or(DefaultLimits()) }

// maxObjectBytes caps a tree or commit object: far above any real one
// (a tree of 100,000 entries is ~5 MB), far below a memory bomb.
const maxObjectBytes = 64 << 20

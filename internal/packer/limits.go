package packer

import (
	"fmt"

	"github.com/tether-run/tether/internal/packer/archive"

	"github.com/tether-run/tether/internal/treepolicy"
)

// Default caps, applied to every field of Limits left zero.
const (
	DefaultMaxTotalBytes = archive.DefaultMaxTotalBytes
	DefaultMaxFiles      = archive.DefaultMaxFiles
	DefaultMaxFileBytes  = archive.DefaultMaxFileBytes
	// DefaultMaxDepth caps the directories on the way to a path below the
	// state root.
	DefaultMaxDepth = archive.DefaultMaxDepth
	// DefaultMaxPathBytes is Linux's PATH_MAX.
	DefaultMaxPathBytes = archive.DefaultMaxPathBytes
)

// Limits caps what one session archive may hold: the one limits type of
// every untrusted tree (treepolicy.Limits), with a session's defaults.
// They apply when packing (a session over them is refused rather than
// shipped) and when unpacking (before any byte is written). A zero or
// negative field means its default.
type Limits = treepolicy.Limits

// DefaultLimits returns the defaults: 512 MiB in total, 10,000 entries,
// 256 MiB for a single file, paths at most 64 components and 4,096 bytes.
func DefaultLimits() Limits { return archive.DefaultLimits() }

// withDefaults fills the zero fields of l from DefaultLimits.
func withDefaults(l Limits) Limits { return l.Or(DefaultLimits()) }

// checkPath refuses a slash-separated path over MaxPathBytes or MaxDepth.
func checkPath(l Limits, p string) error {
	if err := l.CheckPath(p); err != nil {
		return fmt.Errorf("%w: %v", ErrTooDeep, err)
	}
	return nil
}

// MaxBlobBytes is the largest blob an archive within these limits can be.
// A caller reading a session blob from a store caps the read at it (for
// example with blob.GetBytesMax), so a huge object is refused before it is
// held in memory.
func MaxBlobBytes(l Limits) int64 {
	return maxBlobBytes(withDefaults(l))
}

func maxStreamBytes(l Limits) int64 { return archive.MaxStreamBytes(l) }

func maxBlobBytes(l Limits) int64 { return archive.MaxBlobBytes(l) }

package treepolicy

import (
	"fmt"
	"strings"
)

// Limits bound what one untrusted tree may hold: a session archive (whose
// defaults are packer.DefaultLimits) or a workspace snapshot (whose
// defaults are workspace.DefaultLimits, each field settable with the
// TETHER_WORKSPACE_* variable named below). They apply when the tree is
// made (a tree over them is refused rather than stored) and when it is
// read back from the store (before anything is written). A zero or
// negative field means the engine's default (Or).
type Limits struct {
	// MaxFiles caps the entries: files, and for a snapshot the
	// directories too (TETHER_WORKSPACE_MAX_FILES).
	MaxFiles int
	// MaxTotalBytes caps the sum of the files' sizes, uncompressed
	// (TETHER_WORKSPACE_MAX_BYTES).
	MaxTotalBytes int64
	// MaxFileBytes caps any single file, uncompressed
	// (TETHER_WORKSPACE_MAX_FILE_BYTES).
	MaxFileBytes int64
	// MaxDepth caps the directories on the way to any entry
	// (TETHER_WORKSPACE_MAX_DEPTH). A Claude Code subagent transcript is 4
	// deep (projects/<slug>/<id>/subagents/<file>).
	MaxDepth int
	// MaxPathBytes caps the length of any path inside the tree
	// (TETHER_WORKSPACE_MAX_PATH_BYTES); Linux's PATH_MAX is 4,096.
	MaxPathBytes int
}

// Or returns l with each zero or negative field taken from d.
func (l Limits) Or(d Limits) Limits {
	l.MaxFiles = OrDefault(l.MaxFiles, d.MaxFiles)
	l.MaxTotalBytes = OrDefault(l.MaxTotalBytes, d.MaxTotalBytes)
	l.MaxFileBytes = OrDefault(l.MaxFileBytes, d.MaxFileBytes)
	l.MaxDepth = OrDefault(l.MaxDepth, d.MaxDepth)
	l.MaxPathBytes = OrDefault(l.MaxPathBytes, d.MaxPathBytes)
	return l
}

// OrDefault returns v, or d where v is zero or negative: how every limit
// of the engine (a tree's, a transcript's, a sandbox's) left unset takes
// its default.
func OrDefault[T ~int | ~int64 | ~float64](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// CheckPath refuses a slash-separated path inside the tree over
// MaxPathBytes or deeper than MaxDepth directories. It looks at the length
// first, so a huge name costs no more than that. The error says what and
// by how much; each engine wraps it in its own sentinel.
func (l Limits) CheckPath(p string) error {
	if len(p) > l.MaxPathBytes {
		return fmt.Errorf("a path of %d bytes (%.40q…) is over the %d-byte limit", len(p), p, l.MaxPathBytes)
	}
	if d := strings.Count(strings.TrimSuffix(p, "/"), "/"); d > l.MaxDepth {
		return fmt.Errorf("%.80q… is %d directories deep, over the limit of %d", p, d, l.MaxDepth)
	}
	return nil
}

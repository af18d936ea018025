package workspace

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

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

// LimitsFromEnv reads the TETHER_WORKSPACE_* variables over the defaults.
// A malformed value is an error naming the variable.
func LimitsFromEnv() (Limits, error) {
	l := DefaultLimits()
	ints := []struct {
		name string
		dst  *int
	}{{"TETHER_WORKSPACE_MAX_FILES", &l.MaxFiles}, {"TETHER_WORKSPACE_MAX_DEPTH", &l.MaxDepth}}
	for _, v := range ints {
		if s := os.Getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return l, fmt.Errorf("%s=%q: want a positive integer", v.name, s)
			}
			*v.dst = n
		}
	}
	sizes := []struct {
		name string
		dst  *int64
	}{{"TETHER_WORKSPACE_MAX_BYTES", &l.MaxTotalBytes}, {"TETHER_WORKSPACE_MAX_FILE_BYTES", &l.MaxFileBytes}}
	for _, v := range sizes {
		if s := os.Getenv(v.name); s != "" {
			n, err := parseSize(s)
			if err != nil {
				return l, fmt.Errorf("%s=%q: %v", v.name, s, err)
			}
			*v.dst = n
		}
	}
	return l, nil
}

// parseSize reads a byte count with an optional K, M or G suffix (powers
// of 1024): "512M", "4G", "1048576".
func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive byte count such as 512M or 4G")
	}
	return n * mult, nil
}

// maxObjectBytes caps a tree or commit object: far above any real one
// (a tree of 100,000 entries is ~5 MB), far below a memory bomb.
const maxObjectBytes = 64 << 20

package treepolicy

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLimitsOrFillsOnlyUnsetFields(t *testing.T) {
	d := Limits{MaxFiles: 1, MaxTotalBytes: 2, MaxFileBytes: 3, MaxDepth: 4, MaxPathBytes: 5}
	assert.Equal(t, d, Limits{}.Or(d))
	assert.Equal(t, d, Limits{MaxFiles: -1, MaxDepth: -7}.Or(d))
	got := Limits{MaxFiles: 10, MaxPathBytes: 50}.Or(d)
	assert.Equal(t, Limits{MaxFiles: 10, MaxTotalBytes: 2, MaxFileBytes: 3, MaxDepth: 4, MaxPathBytes: 50}, got)
}

func TestCheckPathCountsDirectoriesAndBytes(t *testing.T) {
	l := Limits{MaxDepth: 2, MaxPathBytes: 12}
	for p, ok := range map[string]bool{
		"f": true, "a/f": true, "a/b/f": true, "a/b/": true,
		"a/b/c/": true, "a/b/c/f": false, "a/b/c/d/": false, strings.Repeat("x", 12): true, strings.Repeat("x", 13): false,
	} {
		assert.Equal(t, ok, l.CheckPath(p) == nil, "%s: %v", p, l.CheckPath(p))
	}
}

func TestKinds(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		0o644: "file", fs.ModeDir: "directory", fs.ModeSymlink: "symlink", fs.ModeNamedPipe: "fifo",
		fs.ModeSocket: "socket", fs.ModeDevice: "device", fs.ModeDevice | fs.ModeCharDevice: "device", fs.ModeIrregular: "special file",
	} {
		assert.Equal(t, want, Kind(m), "%v", m)
		assert.Equal(t, want != "file" && want != "directory" && want != "symlink", Special(m), "%v", m)
	}
}

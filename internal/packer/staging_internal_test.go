package packer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/packer/archive"
)

// Every staging directory a crashed unpack left an hour ago or more is
// swept; a fresh one (an unpack still running) and other names are not.
func TestSweepStagingRemovesEveryStaleDirectory(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * staleStaging)
	for _, name := range []string{stagingPrefix + "a", stagingPrefix + "b", stagingPrefix + "c", stagingPrefix + "fresh", "projects"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, name, "x"), 0o755))
		if name != stagingPrefix+"fresh" {
			require.NoError(t, os.Chtimes(filepath.Join(dir, name), old, old))
		}
	}
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	sweepStaging(root)
	for name, kept := range map[string]bool{stagingPrefix + "a": false, stagingPrefix + "b": false, stagingPrefix + "c": false, stagingPrefix + "fresh": true, "projects": true} {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.Equal(t, kept, err == nil, name)
	}
}

// The decompressed stream's cap is inclusive: a stream of exactly the cap
// reads whole, one byte more fails.
func TestCapReaderIsInclusive(t *testing.T) {
	read := func(n int) (int, error) {
		c := &archive.CapReader{Ctx: context.Background(), R: bytes.NewReader(make([]byte, n)), Left: 10}
		total, buf := 0, make([]byte, 64)
		for range 100 { // a bound: a reader stuck at 0 bytes fails, not hangs
			k, err := c.Read(buf)
			total += k
			if err != nil {
				return total, err
			}
		}
		return total, errors.New("no end after 100 reads")
	}
	n, err := read(10)
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, 10, n)
	_, err = read(11)
	require.ErrorIs(t, err, ErrTooLarge)
}

package confine

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

// threads reads num_threads after a command name that holds spaces and
// parentheses, and counts a process it cannot read as one.
func TestThreadsOfAProcess(t *testing.T) {
	dir := t.TempDir()
	stat := "4242 (a) b (c d) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 7 0 123 4567 89 18446744073709551615\n"
	assert.NoError(t, os.WriteFile(dir+"/stat", []byte(stat), 0o644))
	assert.Equal(t, 7, threads(dir))
	assert.Equal(t, 1, threads(t.TempDir()), "a process gone meanwhile")
	assert.GreaterOrEqual(t, threads("/proc/self"), 2, "a Go test binary runs more than one thread")
}

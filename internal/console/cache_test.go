package console

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The console's one cache type: bounded in entries (the least recently
// used goes first) and in age, each entry for its own time.
func TestCacheBoundsEntriesAndAge(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newCache[int](2, time.Minute)
	c.now = func() time.Time { return now }
	c.put("a", 1)
	c.put("b", 2)
	_, _ = c.get("a") // a is used: b goes first
	c.put("c", 3)
	_, ok := c.get("b")
	assert.False(t, ok, "the least recently used went")
	v, ok := c.get("a")
	assert.True(t, ok)
	assert.Equal(t, 1, v)
	c.putFor("c", 30, time.Second)
	now = now.Add(2 * time.Second)
	_, ok = c.get("c")
	assert.False(t, ok, "an entry past its own time")
	_, ok = c.get("a")
	assert.True(t, ok, "another keeps the cache's time")
	now = now.Add(time.Minute)
	_, ok = c.get("a")
	assert.False(t, ok)
}

func TestPlural(t *testing.T) {
	for want, got := range map[string]string{
		"1 file": plural(1, "file"), "0 files": plural(0, "file"), "3 branches": plural(3, "branch"),
		"2 boxes": plural(2, "box"), "1 branch": plural(1, "branch"), "4 more files": plural(4, "more file"),
	} {
		assert.Equal(t, want, got)
	}
}

package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// A run page's lists go page by page: a page number out of range shows
// the first, and each page links the pages either side of it.
func TestPaging(t *testing.T) {
	for _, c := range []struct{ n, total, per, page, pages int }{
		{1, 0, 50, 1, 1}, {2, 120, 50, 2, 3}, {4, 120, 50, 1, 3}, {0, 12, 12, 1, 1}, {2, 13, 12, 2, 2},
	} {
		page, pages := pageOf(c.n, c.total, c.per)
		assert.Equal(t, [2]int{c.page, c.pages}, [2]int{page, pages}, "%+v", c)
	}
	prev, next := pageLinks("r 1", "cps", "checkpoints", 2, 3)
	assert.Equal(t, "/runs/r%201?cps=1#checkpoints", prev)
	assert.Equal(t, "/runs/r%201?cps=3#checkpoints", next)
	prev, next = pageLinks("r", "page", "timeline", 1, 1)
	assert.Empty(t, prev+next, "one page links no other")
}

// A visit's or a join's address that is not one is a page not found,
// which says what the address should be.
func TestVisitAddress(t *testing.T) {
	at := func(path, run, node, visit string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.SetPathValue("run", run)
		r.SetPathValue("node", node)
		r.SetPathValue("visit", visit)
		return r
	}
	run, node, visit, err := visitAddress(at("/runs/r1/visits/write/2", "r1", "write", "2"), "visit")
	require.NoError(t, err)
	assert.Equal(t, []any{"r1", "write", 2}, []any{run, node, visit})
	for _, bad := range []*http.Request{at("/runs/r1/joins/j/0", "r1", "j", "0"), at("/runs/r1/joins/j/x", "r1", "j", "x"), at("/runs/r1/joins/j%20k/1", "r1", "j k", "1")} {
		_, _, _, err := visitAddress(bad, "join")
		var pe *pageError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, http.StatusNotFound, pe.status)
		assert.Equal(t, "No such join", pe.title)
		assert.Equal(t, bad.URL.Path+" is not a join's address: /runs/RUN/joins/NODE/N", err.Error())
	}
	_, _, _, err = visitAddress(at("/runs/r1/visits/write/0", "r1", "write", "0"), "visit")
	assert.EqualError(t, err, "/runs/r1/visits/write/0 is not a visit's address: /runs/RUN/visits/NODE/N")
}

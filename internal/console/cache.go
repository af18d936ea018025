package console

import (
	"container/list"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/runstore"
)

// cache keeps the values the console read recently, each for as long as
// it stays true: a checkpoint once written never changes; the answers in
// an execution's history at one length never change; a closed run's
// summary never changes, an open one's only for a moment; what is down
// changes any second. Each cache is a field of the Server that reads
// through it, bounded in entries (the least recently used goes first)
// and in age.
type cache[V any] struct {
	mu    sync.Mutex
	order *list.List
	m     map[string]*list.Element
	max   int
	ttl   time.Duration
	now   func() time.Time
}

type cacheEntry[V any] struct {
	key     string
	v       V
	expires time.Time
}

// newCache keeps up to n values, each for ttl unless put says otherwise.
func newCache[V any](n int, ttl time.Duration) *cache[V] {
	return &cache[V]{order: list.New(), m: map[string]*list.Element{}, max: n, ttl: ttl, now: time.Now}
}

func (c *cache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok || c.now().After(el.Value.(*cacheEntry[V]).expires) {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry[V]).v, true
}

// put keeps v under key for the cache's time.
func (c *cache[V]) put(key string, v V) { c.putFor(key, v, c.ttl) }

// putFor keeps v under key for ttl.
func (c *cache[V]) putFor(key string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &cacheEntry[V]{key: key, v: v, expires: c.now().Add(ttl)}
	if el, ok := c.m[key]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	c.m[key] = c.order.PushFront(e)
	for c.order.Len() > c.max {
		el := c.order.Back()
		c.order.Remove(el)
		delete(c.m, el.Value.(*cacheEntry[V]).key)
	}
}

// caches are the Server's: what its pages read again and again.
type caches struct {
	// peeked and full are checkpoints without and with their path blocks.
	peeked *cache[*runstore.Checkpoint]
	full   *cache[*runstore.Checkpoint]
	// answered are the answers an execution's history held at a length.
	answered *cache[[]answered]
	// summaries are what the list shows of runs' latest checkpoints;
	// counts how many runs a filter matches.
	summaries *cache[summary]
	counts    *cache[runCount]
}

const (
	// checkpointMemory is how long a checkpoint read is trusted: a run
	// deleted and started again under its id writes new checkpoints.
	checkpointMemory = 10 * time.Minute
	// openSummaryTTL is how long an open run's summary is shown again.
	openSummaryTTL = 2 * time.Second
	// countTTL is how long a count of runs is shown again.
	countTTL = 10 * time.Second
)

func newCaches() caches {
	return caches{
		peeked:    newCache[*runstore.Checkpoint](512, checkpointMemory),
		full:      newCache[*runstore.Checkpoint](32, checkpointMemory),
		answered:  newCache[[]answered](256, checkpointMemory),
		summaries: newCache[summary](10000, checkpointMemory),
		counts:    newCache[runCount](64, countTTL),
	}
}

package activities

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/tether-run/tether/internal/agent"
)

// progressBoard holds the latest progress of each running visit on this
// worker, by activity attempt, for the heartbeats to carry: every
// heartbeat loop of one attempt sends the same details, so none of them
// overwrites the progress with empty details. It keeps one small value per
// running attempt and nothing once the attempt's heartbeats stop.
type progressBoard struct {
	mu sync.Mutex
	m  map[string]*progressEntry
}

type progressEntry struct {
	// holders counts the heartbeat loops of the attempt still running.
	holders int
	p       *agent.Progress
	started time.Time
	// lost is what earlier attempts of the visit did before their workers
	// were lost (carry): every heartbeat carries it, begun or not.
	lost *agent.Interruption
}

// visitProgress is the worker's board. It is one per process, keyed by
// activity attempt, so that the blob store's retry hook, which knows only
// the context, heartbeats the same details as the visit's own loop.
var visitProgress progressBoard

// progressKey names the activity attempt ctx runs in; "" outside one.
func progressKey(ctx context.Context) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	return string(activity.GetInfo(ctx).TaskToken)
}

// hold registers a heartbeat loop of the attempt; release ends it and
// forgets the attempt with its last loop.
func (b *progressBoard) hold(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.entry(key).holders++
}

func (b *progressBoard) entry(key string) *progressEntry {
	if b.m == nil {
		b.m = map[string]*progressEntry{}
	}
	e := b.m[key]
	if e == nil {
		e = &progressEntry{}
		b.m[key] = e
	}
	return e
}

// carry makes every heartbeat of the attempt carry what its lost
// predecessors did. It is called before the attempt's first heartbeat,
// which would otherwise replace the last details they reported.
func (b *progressBoard) carry(key string, lost *agent.Interruption) {
	if key == "" || lost == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(key)
	e.lost = lost
	if e.p != nil {
		e.p.Interrupted = lost
	}
}

func (b *progressBoard) release(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.m[key]; e != nil {
		if e.holders--; e.holders <= 0 {
			delete(b.m, key)
		}
	}
}

// begin starts the visit's progress: from now on the attempt's heartbeats
// carry it, with the time since now as its elapsed time.
func (b *progressBoard) begin(key string, p agent.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.m[key]; e != nil {
		p.Interrupted = e.lost
		e.p, e.started = &p, time.Now()
	}
}

// update replaces the visit's progress, keeping what names the visit.
func (b *progressBoard) update(key string, p agent.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.m[key]
	if e == nil || e.p == nil {
		return
	}
	p.Node, p.Visit, p.Backend, p.Interrupted = e.p.Node, e.p.Visit, e.p.Backend, e.lost
	p = p.Bound()
	e.p = &p
}

// details are the heartbeat details of the attempt: its progress, if it
// has begun; else what its lost predecessors did, if any; else none.
func (b *progressBoard) details(key string) []any {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.m[key]
	if e == nil {
		return nil
	}
	if e.p == nil {
		if e.lost == nil {
			return nil
		}
		return []any{agent.Progress{Interrupted: e.lost}}
	}
	p := *e.p
	p.Elapsed = time.Since(e.started).Round(time.Second)
	return []any{p}
}

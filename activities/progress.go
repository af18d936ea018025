package activities

import (
	"context"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/agent"
	"go.temporal.io/sdk/activity"
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
}

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
	if b.m == nil {
		b.m = map[string]*progressEntry{}
	}
	e := b.m[key]
	if e == nil {
		e = &progressEntry{}
		b.m[key] = e
	}
	e.holders++
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
	p.Node, p.Visit, p.Backend = e.p.Node, e.p.Visit, e.p.Backend
	p = p.Bound()
	e.p = &p
}

// details are the heartbeat details of the attempt: its progress, if it
// has begun, else none.
func (b *progressBoard) details(key string) []any {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.m[key]
	if e == nil || e.p == nil {
		return nil
	}
	p := *e.p
	p.Elapsed = time.Since(e.started).Round(time.Second)
	return []any{p}
}

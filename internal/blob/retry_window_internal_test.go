package blob

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// fixedBackOff always asks for the same wait (or backoff.Stop).
type fixedBackOff time.Duration

func (f fixedBackOff) NextBackOff() time.Duration { return time.Duration(f) }
func (fixedBackOff) Reset()                       {}

// A wait is cut to what is left of the retry window and to MaxBackoff, and
// a schedule that stops, stops.
func TestWindowBackOffCutsWaits(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name       string
		next       time.Duration
		elapsed    time.Duration
		window     time.Duration
		most       time.Duration
		atLeast    time.Duration
		atMost     time.Duration
		wantStopOK bool
	}{
		{name: "window left", next: 10 * time.Minute, elapsed: 50 * time.Second, window: time.Minute, most: time.Hour, atLeast: 5 * time.Second, atMost: 10 * time.Second},
		{name: "most", next: 10 * time.Minute, window: time.Hour, most: 3 * time.Second, atLeast: 3 * time.Second, atMost: 3 * time.Second},
		{name: "schedule", next: 2 * time.Second, window: time.Hour, most: time.Hour, atLeast: 2 * time.Second, atMost: 2 * time.Second},
		{name: "window over", next: time.Second, elapsed: 2 * time.Minute, window: time.Minute, most: time.Hour, atLeast: 0, atMost: 0},
	}
	for _, c := range cases {
		w := &windowBackOff{b: fixedBackOff(c.next), start: now.Add(-c.elapsed), window: c.window, most: c.most}
		if got := w.NextBackOff(); got < c.atLeast || got > c.atMost {
			t.Errorf("%s: waits %v, want between %v and %v", c.name, got, c.atLeast, c.atMost)
		}
	}
	w := &windowBackOff{b: fixedBackOff(backoff.Stop), start: now, window: time.Hour, most: time.Hour}
	if got := w.NextBackOff(); got != backoff.Stop {
		t.Errorf("a stopped schedule waits %v, want backoff.Stop", got)
	}
}

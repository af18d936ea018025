package blob

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// A zero (or negative) backoff means the default, never a retry loop that
// does not wait.
func TestRetryPolicyDefaults(t *testing.T) {
	for _, p := range []RetryPolicy{{}, {InitialBackoff: -1, MaxBackoff: -1}} {
		got := p.withDefaults()
		if got.InitialBackoff != DefaultRetryInitialBackoff || got.MaxBackoff != DefaultRetryMaxBackoff || got.MaxElapsed != DefaultRetryMaxElapsed {
			t.Errorf("%+v with defaults = %+v", p, got)
		}
	}
}

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

// Open retries by default for two minutes; retry= in the URL, then the
// policy's MaxElapsed (config's TETHER_STORE_RETRY), change it, and 0
// turns it off.
func TestOpenRetryConfig(t *testing.T) {
	ctx := context.Background()
	hook := func(context.Context, string, string, int, error) {}
	for _, c := range []struct {
		url, env string
		opts     []OpenOption
		want     time.Duration // 0: not wrapped
		wantErr  string
	}{
		{url: "mem://", want: DefaultRetryMaxElapsed},
		{url: "mem://?retry=30s", want: 30 * time.Second},
		{url: "mem://?retry=0", want: 0},
		{url: "mem://", opts: []OpenOption{WithRetryPolicy(RetryPolicy{MaxElapsed: 5 * time.Second, OnRetry: hook})}, want: 5 * time.Second},
		{url: "mem://", opts: []OpenOption{WithRetryPolicy(RetryPolicy{MaxElapsed: -1})}, want: 0},
		{url: "mem://?retry=1m", opts: []OpenOption{WithRetryPolicy(RetryPolicy{MaxElapsed: -1, OnRetry: hook})}, want: time.Minute},
		{url: "mem://", opts: []OpenOption{WithRetryPolicy(RetryPolicy{MaxElapsed: time.Second, OnRetry: hook})}, want: time.Second},
		{url: "mem://?encrypt=true", opts: []OpenOption{WithEncryptionKey([]byte(strings.Repeat("k", 32))), WithRetryPolicy(RetryPolicy{OnRetry: hook})}, want: DefaultRetryMaxElapsed},
		{url: "mem://?retry=soon", wantErr: `retry="soon" is not a duration`},
	} {
		t.Run(c.url+" "+c.env, func(t *testing.T) {
			s, err := Open(ctx, c.url, c.opts...)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Open = %v, want an error containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, ok := s.(*retryStore)
			switch {
			case c.want == 0 && ok:
				t.Fatalf("retrying for %v, want no retry", r.p.MaxElapsed)
			case c.want != 0 && !ok:
				t.Fatalf("not retrying (%T), want %v", s, c.want)
			case ok && r.p.MaxElapsed != c.want:
				t.Fatalf("retrying for %v, want %v", r.p.MaxElapsed, c.want)
			case ok && len(c.opts) > 0 && r.p.OnRetry == nil:
				t.Fatal("the OnRetry hook was lost")
			}
			if strings.Contains(c.url, "encrypt") {
				if _, enc := r.inner.(*encStore); !enc {
					t.Fatalf("retry does not wrap the encryption (%T)", r.inner)
				}
			}
		})
	}
}

// The SDK's retries are bounded as docs/storage.md's worst case assumes,
// whatever AWS_MAX_ATTEMPTS says.
func TestS3RetryerIsBounded(t *testing.T) {
	t.Setenv("AWS_MAX_ATTEMPTS", "10")
	t.Setenv("AWS_RETRY_MODE", "adaptive")
	s, err := OpenS3(context.Background(), S3Config{Bucket: "b", Endpoint: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	r := s.(*s3Store).client.Options().Retryer
	if got := r.MaxAttempts(); got != s3MaxAttempts {
		t.Fatalf("the SDK makes %d attempts per request, want %d", got, s3MaxAttempts)
	}
	for attempt := 1; attempt <= 10; attempt++ {
		d, err := r.RetryDelay(attempt, errors.New("connection refused"))
		if err != nil || d > s3MaxBackoff {
			t.Fatalf("attempt %d waits %v (%v), want at most %v", attempt, d, err, s3MaxBackoff)
		}
	}
	// No client-side retry quota: a long outage never turns a request
	// into "retry quota exceeded" without reaching the store.
	for range 1000 {
		if _, err := r.GetRetryToken(context.Background(), errors.New("connection refused")); err != nil {
			t.Fatalf("the retryer ran out of retry tokens: %v", err)
		}
	}
}

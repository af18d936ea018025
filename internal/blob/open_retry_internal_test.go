package blob

import (
	"context"
	"strings"
	"testing"
	"time"
)

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

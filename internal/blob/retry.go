package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// RetryEnv names the environment variable that sets how long a store
// opened with Open keeps retrying one operation through an outage: a Go
// duration ("2m", "30s"); "0" turns retrying off. internal/config reads it
// into RetryPolicy.MaxElapsed; the URL parameter retry= wins over it.
const RetryEnv = "TETHER_STORE_RETRY"

// Retry defaults: an operation keeps trying for two minutes, waiting
// 250 ms, then twice as long each time, each wait drawn between half and
// one and a half times that and never over 5 s.
const (
	DefaultRetryMaxElapsed     = 2 * time.Minute
	DefaultRetryInitialBackoff = 250 * time.Millisecond
	DefaultRetryMaxBackoff     = 5 * time.Second
)

// retryBufferBytes is how much of a Put body that cannot seek WithRetry
// keeps, so that the Put can be replayed.
const retryBufferBytes = 8 << 20

// RetryPolicy says how WithRetry retries transient failures.
type RetryPolicy struct {
	// MaxElapsed bounds the time one operation spends retrying: no new
	// attempt starts after it. Zero means DefaultRetryMaxElapsed; negative
	// turns retrying off.
	MaxElapsed time.Duration
	// InitialBackoff is the first wait (default 250 ms); each wait doubles,
	// drawn at random between half and one and a half times it so that
	// many workers do not retry in step, and is never over MaxBackoff
	// (default 5 s).
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// OnRetry, if set, is called before each wait with the operation
	// ("put", "get", "stat", "list", "delete"), the key or
	// prefix, the attempt that failed (from 1) and its error. It is where a
	// caller records progress, e.g. a Temporal activity heartbeat, so that
	// a long wait is not taken for a hung worker.
	OnRetry func(ctx context.Context, op, key string, attempt int, err error)
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxElapsed == 0 {
		p.MaxElapsed = DefaultRetryMaxElapsed
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = DefaultRetryInitialBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = DefaultRetryMaxBackoff
	}
	p.MaxBackoff = max(p.MaxBackoff, p.InitialBackoff)
	return p
}

// WithRetry wraps s so that each operation that fails with a transient
// error (IsTransient: the store unreachable, a timeout, S3 throttling or a
// 5xx) is tried again with exponential backoff and jitter until it
// succeeds, fails otherwise, its context ends, or p.MaxElapsed has passed.
// Any other error (not found, exists, an invalid key, access denied, a
// blob that cannot be decrypted, a cancelled context) is returned at once.
// A policy with a negative MaxElapsed returns s itself.
//
// A Put is retried only when its body can be sent again: an io.Seeker is
// sought back to where it started (PutBytes passes one); any other reader
// is retried while what it gave so far fits in 8 MiB, which the wrapper
// keeps. Past that, the Put is tried once. GetBytes and GetBytesMax retry
// the whole read; a reader returned by Get is not resumed after a
// mid-stream failure, since the blob could have changed meanwhile.
func WithRetry(s Store, p RetryPolicy) Store {
	if p.MaxElapsed < 0 {
		return s
	}
	return &retryStore{inner: s, p: p.withDefaults()}
}

type retryStore struct {
	inner Store
	p     RetryPolicy
}

// do runs attempt until it succeeds or must not be retried. replay, if
// set, prepares the next attempt and reports whether there can be one.
// The schedule is cenkalti/backoff's; what is added here is what the
// store needs: only transient errors are retried, the last wait is cut
// to end at MaxElapsed so that one last attempt starts there, and every
// way of giving up says how long the store was tried.
func (r *retryStore) do(ctx context.Context, op, key string, attempt func() error, replay func() bool) error {
	start := time.Now()
	n := 0
	var last error
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		n++
		err := attempt()
		last = err
		if err == nil || !IsTransient(err) || ctx.Err() != nil {
			return struct{}{}, backoff.Permanent(err)
		}
		if elapsed := time.Since(start); elapsed >= r.p.MaxElapsed {
			return struct{}{}, backoff.Permanent(fmt.Errorf("blob: %s %q: gave up after trying for %s (%d attempts; the store is unavailable, retried for up to %s): %w",
				op, key, elapsed.Round(time.Millisecond), n, r.p.MaxElapsed, err))
		}
		if replay != nil && !replay() {
			return struct{}{}, backoff.Permanent(fmt.Errorf("blob: %s %q: not retried, the body cannot be sent again (pass an io.Seeker, or at most %d MiB): %w", op, key, retryBufferBytes>>20, err))
		}
		if r.p.OnRetry != nil {
			r.p.OnRetry(ctx, op, key, n, err)
		}
		return struct{}{}, err
	},
		backoff.WithBackOff(&windowBackOff{b: r.schedule(), start: start, window: r.p.MaxElapsed, most: r.p.MaxBackoff}),
		backoff.WithMaxElapsedTime(0), // the window is windowBackOff's, so the last attempt lands at its end
	)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) && last != nil && !errors.Is(last, ctx.Err()) {
		return fmt.Errorf("blob: %s %q: %w while retrying (attempt %d, after %s); last store error: %v", op, key, ctx.Err(), n, time.Since(start).Round(time.Millisecond), last)
	}
	return err
}

// schedule is the policy's exponential backoff: each wait doubles from
// InitialBackoff, drawn between half and one and a half times that, so
// that many workers do not retry in step.
func (r *retryStore) schedule() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{
		InitialInterval:     r.p.InitialBackoff,
		RandomizationFactor: 0.5,
		Multiplier:          2,
		MaxInterval:         r.p.MaxBackoff,
	}
}

// windowBackOff cuts a schedule's waits to end at the retry window, so an
// outage that ends just before the window closes is still seen, and to
// at most MaxBackoff, so an operation ends within MaxBackoff of the
// store's return.
type windowBackOff struct {
	b      backoff.BackOff
	start  time.Time
	window time.Duration
	most   time.Duration
}

func (w *windowBackOff) NextBackOff() time.Duration {
	next := w.b.NextBackOff()
	if next == backoff.Stop {
		return next
	}
	return max(0, min(next, w.most, w.window-time.Since(w.start)))
}

func (w *windowBackOff) Reset() { w.b.Reset() }

func (r *retryStore) Put(ctx context.Context, key string, body io.Reader, size int64, opts ...PutOption) error {
	rp := newReplay(body)
	return r.do(ctx, "put", key, func() error {
		return r.inner.Put(ctx, key, rp, size, opts...)
	}, rp.rewind)
}

func (r *retryStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := r.do(ctx, "get", key, func() (err error) {
		rc, err = r.inner.Get(ctx, key)
		return err
	}, nil)
	return rc, err
}

// getBytes serves GetBytes and GetBytesMax: the whole read is one attempt,
// so a failure mid-stream is retried from the start.
func (r *retryStore) getBytes(ctx context.Context, key string, max int64) ([]byte, error) {
	var b []byte
	err := r.do(ctx, "get", key, func() (err error) {
		b, err = GetBytesMax(ctx, r.inner, key, max)
		return err
	}, nil)
	return b, err
}

func (r *retryStore) Stat(ctx context.Context, key string) (Info, error) {
	var in Info
	err := r.do(ctx, "stat", key, func() (err error) {
		in, err = r.inner.Stat(ctx, key)
		return err
	}, nil)
	return in, err
}

func (r *retryStore) List(ctx context.Context, prefix string) ([]Info, error) {
	var infos []Info
	err := r.do(ctx, "list", prefix, func() (err error) {
		infos, err = r.inner.List(ctx, prefix)
		return err
	}, nil)
	return infos, err
}

func (r *retryStore) Delete(ctx context.Context, key string) error {
	return r.do(ctx, "delete", key, func() error { return r.inner.Delete(ctx, key) }, nil)
}

func (r *retryStore) Close() error { return r.inner.Close() }

// replay lets a Put body be read again from the start: by seeking back, or
// from a copy of what was read, while that fits in retryBufferBytes.
type replay struct {
	r     io.Reader
	seek  io.Seeker
	start int64
	buf   []byte // what was read, for a reader that cannot seek
	pos   int    // the next byte of buf to give on a replay
	over  bool   // buf outgrew retryBufferBytes and was dropped
}

func newReplay(r io.Reader) *replay {
	if s, ok := r.(io.Seeker); ok {
		// Some Seekers cannot (a pipe behind an *os.File): buffer those.
		if off, err := s.Seek(0, io.SeekCurrent); err == nil {
			return &replay{r: r, seek: s, start: off}
		}
	}
	return &replay{r: r}
}

func (p *replay) Read(b []byte) (int, error) {
	if p.seek != nil {
		return p.r.Read(b)
	}
	if p.pos < len(p.buf) {
		n := copy(b, p.buf[p.pos:])
		p.pos += n
		return n, nil
	}
	n, err := p.r.Read(b)
	if n > 0 && !p.over {
		if len(p.buf)+n > retryBufferBytes {
			p.over, p.buf = true, nil
		} else {
			p.buf = append(p.buf, b[:n]...)
		}
		p.pos = len(p.buf)
	}
	return n, err
}

// rewind makes the next Read start from the beginning again, and reports
// whether it could.
func (p *replay) rewind() bool {
	if p.seek != nil {
		_, err := p.seek.Seek(p.start, io.SeekStart)
		return err == nil
	}
	if p.over {
		return false
	}
	p.pos = 0
	return true
}

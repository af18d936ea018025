package blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/blob/storetest"
)

// refused is what a Get or Put sees while the store's server is down.
var refused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

// flaky fails the first n calls of every operation with err, then passes
// them to the store it wraps. A failing Put first reads half its body, as
// a connection cut mid-upload would.
type flaky struct {
	blob.Store
	mu    sync.Mutex
	n     int
	err   error
	calls map[string]int
}

func newFlaky(n int, err error) *flaky {
	return &flaky{Store: blob.NewMem(), n: n, err: err, calls: map[string]int{}}
}

func (f *flaky) fail(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	if f.calls[op] <= f.n {
		return fmt.Errorf("blob: %s: %w", op, f.err)
	}
	return nil
}

func (f *flaky) Put(ctx context.Context, key string, r io.Reader, size int64, opts ...blob.PutOption) error {
	if err := f.fail("put"); err != nil {
		io.CopyN(io.Discard, r, max(size/2, 1))
		return err
	}
	return f.Store.Put(ctx, key, r, size, opts...)
}

func (f *flaky) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := f.fail("get"); err != nil {
		return nil, err
	}
	return f.Store.Get(ctx, key)
}

func (f *flaky) Stat(ctx context.Context, key string) (blob.Info, error) {
	if err := f.fail("stat"); err != nil {
		return blob.Info{}, err
	}
	return f.Store.Stat(ctx, key)
}

func (f *flaky) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	if err := f.fail("list"); err != nil {
		return nil, err
	}
	return f.Store.List(ctx, prefix)
}

func (f *flaky) Delete(ctx context.Context, key string) error {
	if err := f.fail("delete"); err != nil {
		return err
	}
	return f.Store.Delete(ctx, key)
}

// fast retries quickly and records what OnRetry is told.
type retries struct {
	mu  sync.Mutex
	log []string
}

func (r *retries) policy(maxElapsed time.Duration) blob.RetryPolicy {
	return blob.RetryPolicy{MaxElapsed: maxElapsed, InitialBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		OnRetry: func(_ context.Context, op, key string, attempt int, err error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.log = append(r.log, fmt.Sprintf("%s %s #%d", op, key, attempt))
		}}
}

func TestRetryRidesOutTransientErrors(t *testing.T) {
	ctx := context.Background()
	f := newFlaky(3, refused)
	var rec retries
	s := blob.WithRetry(f, rec.policy(time.Minute))
	data := bytes.Repeat([]byte("0123456789"), 100_000) // 1 MB

	// A body that cannot seek is replayed from the wrapper's copy.
	if err := s.Put(ctx, "a/k", io.MultiReader(bytes.NewReader(data)), int64(len(data))); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := blob.GetBytes(ctx, s, "a/k")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetBytes = %d bytes, %v", len(got), err)
	}
	if _, err := s.Stat(ctx, "a/k"); err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if infos, err := s.List(ctx, "a/"); err != nil || len(infos) != 1 {
		t.Fatalf("List = %v, %v", infos, err)
	}
	if err := s.Delete(ctx, "a/k"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, op := range []string{"put", "get", "stat", "list", "delete"} {
		if f.calls[op] != 4 {
			t.Errorf("%s was called %d times, want 3 failures and a success", op, f.calls[op])
		}
	}
	want := []string{"put a/k #1", "put a/k #2", "put a/k #3", "get a/k #1", "get a/k #2", "get a/k #3"}
	if strings.Join(rec.log[:6], ",") != strings.Join(want, ",") || len(rec.log) != 15 {
		t.Errorf("OnRetry saw %v", rec.log)
	}

	// A seekable body is sought back to where it started, not to 0.
	f = newFlaky(2, refused)
	s = blob.WithRetry(f, rec.policy(time.Minute))
	r := strings.NewReader("skipped|the body")
	r.Seek(int64(len("skipped|")), io.SeekStart)
	if err := s.Put(ctx, "b", r, int64(len("the body"))); err != nil {
		t.Fatalf("Put of a seekable body: %v", err)
	}
	if got, err := blob.GetBytes(ctx, f.Store, "b"); err != nil || string(got) != "the body" {
		t.Fatalf("stored %q, %v", got, err)
	}
}

// Permanent failures are returned at once, after one call.
func TestRetryReturnsPermanentErrorsAtOnce(t *testing.T) {
	denied := &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 403}},
		Err:      &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"},
	}}
	for _, err := range []error{blob.ErrNotFound, blob.ErrExists, blob.ErrInvalidKey, blob.ErrDecrypt, denied, context.Canceled, errors.New("disk full")} {
		f := newFlaky(1, err)
		var rec retries
		s := blob.WithRetry(f, rec.policy(time.Minute))
		_, gerr := s.Get(context.Background(), "k")
		if !errors.Is(gerr, err) && !errors.As(gerr, new(*awshttp.ResponseError)) {
			t.Errorf("%v: Get = %v", err, gerr)
		}
		if f.calls["get"] != 1 || len(rec.log) != 0 {
			t.Errorf("%v: %d calls, OnRetry %v; want one call and no retry", err, f.calls["get"], rec.log)
		}
	}
}

// An outage longer than MaxElapsed returns the last error, still transient,
// saying how long the store was tried.
func TestRetryGivesUpAfterMaxElapsed(t *testing.T) {
	f := newFlaky(1<<30, refused)
	var rec retries
	s := blob.WithRetry(f, rec.policy(100*time.Millisecond))
	start := time.Now()
	err := blob.PutBytes(context.Background(), s, "k", []byte("x"))
	if err == nil || !blob.IsTransient(err) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Put = %v, want a transient connection-refused error", err)
	}
	if !strings.Contains(err.Error(), "gave up after trying for") || !strings.Contains(err.Error(), "attempts") {
		t.Errorf("the error does not say how long it tried: %v", err)
	}
	if f.calls["put"] < 3 || time.Since(start) < 100*time.Millisecond {
		t.Errorf("%d attempts in %v", f.calls["put"], time.Since(start))
	}
	t.Log(err)
}

// A body that cannot seek and is over the replay buffer is tried once.
func TestRetryDoesNotReplayLargeStreams(t *testing.T) {
	f := newFlaky(1, refused)
	s := blob.WithRetry(f, blob.RetryPolicy{InitialBackoff: time.Millisecond})
	size := int64(20 << 20)
	err := s.Put(context.Background(), "k", io.LimitReader(zeros{}, size), size)
	if err == nil || !strings.Contains(err.Error(), "cannot be sent again") || f.calls["put"] != 1 {
		t.Fatalf("Put = %v after %d calls", err, f.calls["put"])
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// statCancelledWhileRetrying is a Stat of a store that always refuses,
// retried with waits of an hour, whose context ends at the first retry.
func statCancelledWhileRetrying() error {
	f := newFlaky(1<<30, refused)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := blob.WithRetry(f, blob.RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: time.Hour,
		OnRetry: func(context.Context, string, string, int, error) { cancel() }})
	_, err := s.Stat(ctx, "k")
	return err
}

// The context ends the wait between attempts.
func TestRetryHonoursContext(t *testing.T) {
	err := statCancelledWhileRetrying()
	if !errors.Is(err, context.Canceled) || blob.IsTransient(err) {
		t.Fatalf("Stat = %v, want context.Canceled", err)
	}
}

func TestIsTransient(t *testing.T) {
	resp := func(status int, code string) error {
		return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      &smithy.GenericAPIError{Code: code},
		}}
	}
	wrap := func(err error) error { return fmt.Errorf("blob: get %q: %w", "k", err) }
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{refused, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{timeout, true},
		{&net.DNSError{Err: "server misbehaving", Name: "s3", IsTemporary: true}, true},
		{&net.DNSError{Err: "no such host", Name: "s3", IsNotFound: true}, false},
		{resp(503, "SlowDown"), true},
		{resp(500, "InternalError"), true},
		{resp(502, ""), true},
		{resp(429, ""), true},
		{resp(400, "RequestTimeout"), true},
		{io.ErrUnexpectedEOF, true},
		{&smithyhttp.RequestSendError{Err: io.EOF}, true},
		{resp(403, "AccessDenied"), false},
		{resp(403, "SignatureDoesNotMatch"), false},
		{resp(404, "NoSuchBucket"), false},
		{resp(412, "PreconditionFailed"), false},
		{nil, false},
		{blob.ErrNotFound, false},
		{blob.ErrExists, false},
		{blob.ErrInvalidKey, false},
		{blob.ErrTooLarge, false},
		{blob.ErrDecrypt, false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{errors.New("no space left on device"), false},
	} {
		if got := blob.IsTransient(wrap(c.err)); c.err != nil && got != c.want {
			t.Errorf("IsTransient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if blob.IsTransient(nil) {
		t.Error("IsTransient(nil)")
	}
	// A Put whose reader is short is the caller's mistake.
	err := blob.NewMem().Put(context.Background(), "k", strings.NewReader("abc"), 10)
	if err == nil || blob.IsTransient(err) {
		t.Errorf("a short body: %v, transient %v", err, blob.IsTransient(err))
	}
}

// A connection cut while an encrypted blob streams is a transient fault of
// the store, not a blob that fails to decrypt: the read is retried.
func TestEncryptedMidStreamCutIsTransient(t *testing.T) {
	ctx := context.Background()
	inner := blob.NewMem()
	enc, err := blob.Encrypted(inner, bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("conversation "), 20_000) // 260 KB: five chunks
	if err := blob.PutBytes(ctx, enc, "k", data); err != nil {
		t.Fatal(err)
	}
	cut := &cutOnce{Store: inner}
	enc, _ = blob.Encrypted(cut, bytes.Repeat([]byte{1}, 32))
	_, err = blob.GetBytes(ctx, enc, "k")
	if errors.Is(err, blob.ErrDecrypt) || !blob.IsTransient(err) {
		t.Fatalf("a cut mid-stream = %v; want a transient error, not ErrDecrypt", err)
	}
	got, err := blob.GetBytes(ctx, blob.WithRetry(enc, blob.RetryPolicy{InitialBackoff: time.Millisecond}), "k")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("retried GetBytes = %d bytes, %v", len(got), err)
	}
}

// cutOnce serves its first Get's body up to 100,000 bytes, then fails it
// with io.ErrUnexpectedEOF, as net/http does when a connection drops
// before Content-Length bytes arrived.
type cutOnce struct {
	blob.Store
	done bool
}

func (c *cutOnce) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := c.Store.Get(ctx, key)
	if err != nil || c.done {
		return rc, err
	}
	c.done = true
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, 100_000), failing{io.ErrUnexpectedEOF}), rc}, nil
}

type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }

// The conformance suite holds through the wrapper, on the memory and
// filesystem backends (the S3 one is wrapped by Open in TestS3Conformance).
func TestRetryConformance(t *testing.T) {
	policy := blob.RetryPolicy{MaxElapsed: 2 * time.Second, InitialBackoff: time.Millisecond}
	t.Run("mem", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) storetest.Harness {
			return storetest.Harness{InMemory: true, New: func(t *testing.T) blob.Store { return blob.WithRetry(blob.NewMem(), policy) }}
		})
	})
	t.Run("fs", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) storetest.Harness {
			var faults []storetest.Fault
			for _, f := range fsFaults() {
				faults = append(faults, storetest.Fault{Name: f.Name, Inject: func(t *testing.T) (blob.Store, string) {
					s, k := f.Inject(t)
					return blob.WithRetry(s, policy), k
				}})
			}
			return storetest.Harness{
				New:    func(t *testing.T) blob.Store { return blob.WithRetry(openFS(t, t.TempDir()), policy) },
				Faults: faults,
			}
		})
	})
}

// A body that cannot seek is kept to send again up to the replay buffer,
// inclusive: a first attempt that read exactly that much is sent again
// whole; one that read a byte more is not.
func TestRetryReplaysUpToTheBufferInclusive(t *testing.T) {
	for _, read := range []int64{blob.RetryBufferBytes, blob.RetryBufferBytes + 1} {
		f := newFlaky(1, refused)
		s := blob.WithRetry(f, blob.RetryPolicy{InitialBackoff: time.Millisecond})
		size := 2 * read // the failing attempt reads half its body
		err := s.Put(context.Background(), "k", io.LimitReader(zeros{}, size), size)
		if read == blob.RetryBufferBytes {
			if err != nil || f.calls["put"] != 2 {
				t.Fatalf("a first attempt that read %d bytes: Put = %v after %d calls, want it sent again", read, err, f.calls["put"])
			}
			got, err := blob.GetBytes(context.Background(), f.Store, "k")
			if err != nil || int64(len(got)) != size || bytes.ContainsFunc(got, func(r rune) bool { return r != 0 }) {
				t.Fatalf("stored %d bytes (%v), want the %d bytes sent", len(got), err, size)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "cannot be sent again") || f.calls["put"] != 1 {
			t.Fatalf("a first attempt that read %d bytes: Put = %v after %d calls, want no second attempt", read, err, f.calls["put"])
		}
	}
}

// A body that can seek is sent again by seeking back, whatever its size.
func TestRetryReplaysASeekableBodyOfAnySize(t *testing.T) {
	f := newFlaky(1, refused)
	s := blob.WithRetry(f, blob.RetryPolicy{InitialBackoff: time.Millisecond})
	body := bytes.Repeat([]byte("seekable"), 3*int(blob.RetryBufferBytes)/8) // half of it is over the buffer
	if err := s.Put(context.Background(), "k", bytes.NewReader(body), int64(len(body))); err != nil || f.calls["put"] != 2 {
		t.Fatalf("Put = %v after %d calls", err, f.calls["put"])
	}
	got, err := blob.GetBytes(context.Background(), f.Store, "k")
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("stored %d bytes (%v), want the %d sent", len(got), err, len(body))
	}
}

// A context that ends while a store is being retried says so, and names
// the last store error, which is not what the error wraps.
func TestRetryCancelledSaysWhatItWasRetrying(t *testing.T) {
	err := statCancelledWhileRetrying()
	if !errors.Is(err, context.Canceled) || errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Stat = %v, want context.Canceled, not the store's error", err)
	}
	for _, want := range []string{`blob: stat "k": context canceled while retrying (attempt 1, after `, "last store error: blob: stat: dial tcp: connect: connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Stat = %q, want it to say %q", err, want)
		}
	}
}

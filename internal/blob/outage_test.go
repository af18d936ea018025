package blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/testenv"
)

// outage is how long the S3 server stays down in the outage tests.
const outage = 4 * time.Second

// A store opened with blob.Open rides out a short outage of the S3 server:
// the server process is killed, a Put and a Get start, and the server is
// restarted on the same port and data directory ~4 s later; both succeed.
// Before the store retried, the SDK gave up after its three attempts and
// the run that was saving a checkpoint fail-stopped.
func TestStoreRidesOutS3Outage(t *testing.T) {
	srv := testenv.VersityGW(t)
	s := openURL(t, srv.URL("outage"), blob.WithCredentials(srv.Credentials()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	data := bytes.Repeat([]byte("checkpoint "), 1000)
	if err := blob.PutBytes(ctx, s, "runs/r/before", data); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	down := time.Now()
	ops := map[string]func() error{
		"put": func() error { return blob.PutBytes(ctx, s, "runs/r/during", data) },
		"get": func() error {
			got, err := blob.GetBytes(ctx, s, "runs/r/before")
			if err == nil && !bytes.Equal(got, data) {
				return fmt.Errorf("got %d bytes, want the %d stored", len(got), len(data))
			}
			return err
		},
	}
	type result struct {
		op   string
		err  error
		done time.Time
	}
	results := make(chan result, len(ops))
	for name, do := range ops {
		go func() {
			err := do()
			results <- result{name, err, time.Now()}
		}()
	}
	time.Sleep(outage)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	for range ops {
		r := <-results
		if r.err != nil {
			t.Fatalf("%s during a %v outage: %v", r.op, outage, r.err)
		}
		t.Logf("%s: the server was down for %v; the operation succeeded %v after it stopped, %v after it was back",
			r.op, up.Sub(down).Round(10*time.Millisecond), r.done.Sub(down).Round(10*time.Millisecond), r.done.Sub(up).Round(10*time.Millisecond))
	}
	got, err := blob.GetBytes(ctx, s, "runs/r/during")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the blob put during the outage: %d bytes, %v", len(got), err)
	}
}

// An outage that outlasts the retry budget returns the last error,
// classified transient, saying how long the store was tried; another
// store on the same server, with retrying off, fails at once.
func TestStoreGivesUpOnLongS3Outage(t *testing.T) {
	srv := testenv.VersityGW(t)
	var retried []int
	s := openURL(t, srv.URL("outage")+"&retry=3s", blob.WithCredentials(srv.Credentials()),
		blob.WithRetryPolicy(blob.RetryPolicy{OnRetry: func(_ context.Context, op, key string, attempt int, err error) {
			retried = append(retried, attempt)
		}}))
	srv.Stop()
	start := time.Now()
	err := blob.PutBytes(context.Background(), s, "runs/r/k", []byte("x"))
	took := time.Since(start)
	if err == nil || !blob.IsTransient(err) || errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Put with the server down = %v, want a transient error", err)
	}
	if !strings.Contains(err.Error(), "gave up after trying for") || took < 3*time.Second || len(retried) == 0 {
		t.Fatalf("Put gave up after %v and %d retries: %v", took, len(retried), err)
	}
	t.Logf("gave up after %v: %v", took.Round(10*time.Millisecond), err)

	once := openURL(t, srv.URL("outage")+"&retry=0", blob.WithCredentials(srv.Credentials()))
	start = time.Now()
	err = blob.PutBytes(context.Background(), once, "runs/r/k", []byte("x"))
	if err == nil || !blob.IsTransient(err) || strings.Contains(err.Error(), "gave up") {
		t.Fatalf("Put without retrying = %v", err)
	}
	t.Logf("without retrying (retry=0, as before WithRetry), the Put failed after %v", time.Since(start).Round(10*time.Millisecond))
}

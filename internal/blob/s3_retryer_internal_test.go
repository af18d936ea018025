package blob

import (
	"context"
	"errors"
	"testing"
)

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

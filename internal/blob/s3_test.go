package blob_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/blob/storetest"
	"github.com/tether-run/tether/internal/testenv"
)

func openURL(t testing.TB, url string, opts ...blob.OpenOption) blob.Store {
	t.Helper()
	s, err := blob.Open(context.Background(), url, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", url, err)
	}
	return s
}

// s3Faults are the faults of a remote store: the server gone, the secret
// wrong, the bucket missing. Each must surface as an error, never as
// absence, also through WithRetry (as Open wraps every store). The SDK
// makes one attempt and the wrapper retries for 300 ms, to keep the test
// short; retries change how long a fault takes to surface, not what it
// surfaces as.
func s3Faults(srv *testenv.S3Server) []storetest.Fault {
	open := func(t *testing.T, srv *testenv.S3Server, bucket, secret string) blob.Store {
		s, err := blob.OpenS3(context.Background(), blob.S3Config{
			Bucket: bucket, Prefix: "faults", Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, secret, ""),
			MaxAttempts: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		return blob.WithRetry(s, blob.RetryPolicy{MaxElapsed: 300 * time.Millisecond, InitialBackoff: 10 * time.Millisecond})
	}
	return []storetest.Fault{
		{Name: "ServerStopped", Inject: func(t *testing.T) (blob.Store, string) {
			own := testenv.VersityGW(t)
			s := open(t, own, own.Bucket, own.SecretKey)
			if err := blob.PutBytes(context.Background(), s, "dir/blob", []byte("x")); err != nil {
				t.Fatal(err)
			}
			own.Stop()
			return s, "dir/blob"
		}},
		{Name: "WrongSecret", Inject: func(t *testing.T) (blob.Store, string) {
			return open(t, srv, srv.Bucket, srv.SecretKey+"x"), "dir/blob"
		}},
		{Name: "MissingBucket", Inject: func(t *testing.T) (blob.Store, string) {
			return open(t, srv, "no-such-bucket", srv.SecretKey), "dir/blob"
		}},
	}
}

func TestS3Conformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		srv := testenv.VersityGW(t)
		var n atomic.Int64
		return storetest.Harness{
			New: func(t *testing.T) blob.Store {
				// Each test gets its own prefix of the one bucket.
				return openURL(t, srv.URL(fmt.Sprintf("t%d", n.Add(1))), blob.WithCredentials(srv.Credentials()))
			},
			Faults: s3Faults(srv),
		}
	})
}

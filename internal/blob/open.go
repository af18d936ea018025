package blob

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// OpenOption adjusts Open.
type OpenOption func(*openOptions)

type openOptions struct {
	creds aws.CredentialsProvider
	key   []byte
	retry RetryPolicy
}

// WithCredentials gives the S3 backend credentials instead of the SDK's
// default chain (AWS_* environment, shared profiles, roles). Secrets never
// travel in the URL.
func WithCredentials(p aws.CredentialsProvider) OpenOption {
	return func(o *openOptions) { o.creds = p }
}

// WithEncryptionKey turns encryption on with this 32-byte master key,
// instead of encrypt=true and TETHER_BLOB_KEY.
func WithEncryptionKey(key []byte) OpenOption {
	return func(o *openOptions) { o.key = key }
}

// WithRetryPolicy sets how the store Open returns retries transient
// failures (OnRetry is where a caller heartbeats). Its MaxElapsed yields to
// the URL's retry=.
func WithRetryPolicy(p RetryPolicy) OpenOption {
	return func(o *openOptions) { o.retry = p }
}

// Open returns the Store a URL names:
//
//	file:///abs/dir                 filesystem store rooted at /abs/dir
//	s3://bucket[/prefix]?endpoint=http://127.0.0.1:9000&region=us-east-1&path_style=true&part_size_mib=8
//	mem://                          a fresh in-memory store
//	mem://name                      the in-memory store of that name in this process
//
// Every form accepts encrypt=true, which wraps the store with Encrypted
// using the key in TETHER_BLOB_KEY (Open fails if it is missing or
// malformed). WithEncryptionKey turns encryption on without the URL flag.
// Encryption is never switched on by the environment alone, so a missing
// variable cannot silently write plaintext where ciphertext was meant, or
// the reverse. Unknown parameters are refused, so a typo does not silently
// change the meaning of the URL. URLs carry no secrets: credentials come
// from the AWS SDK's default chain or WithCredentials.
//
// The store retries transient failures (WithRetry) for two minutes per
// operation by default; retry=DURATION in the URL, or TETHER_STORE_RETRY,
// sets how long, and 0 turns it off.
func Open(ctx context.Context, rawURL string, opts ...OpenOption) (Store, error) {
	var o openOptions
	for _, f := range opts {
		f(&o)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("blob: store URL: %w", err)
	}
	if u.User != nil {
		return nil, errors.New("blob: store URL: credentials do not belong in the URL; use the AWS_* environment, a profile or a role")
	}
	q := u.Query()
	encrypt := false
	if v := q.Get("encrypt"); v != "" {
		if encrypt, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("blob: store URL: encrypt=%q is not a boolean", v)
		}
	}
	q.Del("encrypt")
	retry, err := retryFor(q.Get("retry"), o.retry)
	if err != nil {
		return nil, err
	}
	q.Del("retry")

	var s Store
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("blob: store URL %q: use file:///absolute/path (three slashes)", rawURL)
		}
		if err := noParams(q); err != nil {
			return nil, err
		}
		if u.Path == "" || !filepath.IsAbs(u.Path) {
			return nil, fmt.Errorf("blob: store URL %q: the directory must be an absolute path", rawURL)
		}
		s, err = OpenFS(filepath.Clean(u.Path))
	case "mem":
		if err := noParams(q); err != nil {
			return nil, err
		}
		s = openMem(u.Host + strings.TrimSuffix(u.Path, "/"))
	case "s3":
		c := S3Config{Bucket: u.Host, Prefix: u.Path, Endpoint: q.Get("endpoint"), Region: q.Get("region"), Credentials: o.creds}
		if v := q.Get("path_style"); v != "" {
			if c.PathStyle, err = strconv.ParseBool(v); err != nil {
				return nil, fmt.Errorf("blob: store URL: path_style=%q is not a boolean", v)
			}
		}
		if v := q.Get("part_size_mib"); v != "" {
			mib, err := strconv.ParseInt(v, 10, 64)
			if err != nil || mib <= 0 {
				return nil, fmt.Errorf("blob: store URL: part_size_mib=%q is not a positive integer", v)
			}
			c.PartSize = mib << 20
		}
		for _, k := range []string{"endpoint", "region", "path_style", "part_size_mib"} {
			q.Del(k)
		}
		if err := noParams(q); err != nil {
			return nil, err
		}
		s, err = OpenS3(ctx, c)
	default:
		return nil, fmt.Errorf("blob: store URL %q: unknown scheme %q; use file://, s3:// or mem://", rawURL, u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	key := o.key
	if key == nil && encrypt {
		s.Close()
		return nil, fmt.Errorf("blob: store URL %q has encrypt=true but no key was given; set %s to 32 random bytes (e.g. `openssl rand -hex 32`)", rawURL, KeyEnv)
	}
	if key != nil {
		es, err := Encrypted(s, key)
		if err != nil {
			s.Close()
			return nil, err
		}
		s = es
	}
	// Outermost, so that a retried Put re-encrypts the caller's bytes.
	return WithRetry(s, retry), nil
}

// retryFor returns the retry policy of a store: the URL's retry= wins over
// p.MaxElapsed (which config sets from TETHER_STORE_RETRY); a zero
// duration turns retrying off.
func retryFor(param string, p RetryPolicy) (RetryPolicy, error) {
	if param == "" {
		return p, nil
	}
	d, ok := ParseRetry(param)
	if !ok {
		return p, fmt.Errorf("blob: the store URL's retry=%q is not a duration such as 2m or 30s (0 turns retrying off)", param)
	}
	p.MaxElapsed = d
	return p, nil
}

// ParseRetry reads a retry window (retry= of a store URL, or
// TETHER_STORE_RETRY) as a RetryPolicy.MaxElapsed: a duration such as 2m,
// where 0 turns retrying off (-1). A negative or malformed value is not ok.
func ParseRetry(s string) (time.Duration, bool) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false
	}
	if d == 0 {
		return -1, true
	}
	return d, true
}

func noParams(q url.Values) error {
	for k := range q {
		return fmt.Errorf("blob: store URL: unknown parameter %q", k)
	}
	return nil
}

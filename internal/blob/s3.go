package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
)

// S3 upload shape: blobs up to one part go up in a single PutObject; larger
// ones stream as a multipart upload holding at most s3Concurrency+1 parts
// in memory. 8 MiB parts reach 80 GB within S3's 10,000-part limit and keep
// the footprint at ~24 MiB per Put.
const (
	s3DefaultPartSize = 8 << 20
	s3MinPartSize     = 5 << 20
	s3Concurrency     = 2
	s3MaxParts        = 10000
	s3AbortTimeout    = 30 * time.Second
)

// The SDK's own retries are the innermost of three layers (the SDK, then
// WithRetry, then Temporal's activity retries; docs/storage.md adds them
// up). They only ride out a blip inside one request, which matters most
// for the parts of a multipart upload that WithRetry cannot replay: three
// attempts, waits of at most 1 s (the SDK's default is 20 s), and no
// client-side retry quota, which in a long outage would turn WithRetry's
// attempts into "retry quota exceeded" failures that no longer reach the
// store.
const (
	s3MaxAttempts = 3
	s3MaxBackoff  = time.Second
)

// S3Config configures an S3 Store. Open builds it from an s3:// URL.
type S3Config struct {
	Bucket string
	// Prefix, if set, is prepended (with a '/') to every key.
	Prefix string
	// Endpoint overrides the AWS endpoint (an S3-compatible server).
	Endpoint string
	// Region defaults to the SDK's chain, then to us-east-1 when Endpoint
	// is set.
	Region    string
	PathStyle bool
	// PartSize of multipart uploads (default 8 MiB, at least 5 MiB).
	PartSize int64
	// Credentials override the SDK's default chain (AWS_* environment,
	// shared profiles, instance and container roles).
	Credentials aws.CredentialsProvider
	// MaxAttempts per request, retries included (0: s3MaxAttempts, 3).
	MaxAttempts int
}

// s3Store keeps blobs as objects of one bucket under an optional prefix.
type s3Store struct {
	client   *s3.Client
	bucket   string
	prefix   string // "" or ending in '/'
	partSize int64
	bufs     sync.Pool
}

// OpenS3 returns an S3 Store. It does not touch the network.
func OpenS3(ctx context.Context, c S3Config) (Store, error) {
	if c.Bucket == "" {
		return nil, errors.New("blob: open S3 store: no bucket; use s3://BUCKET/PREFIX")
	}
	prefix := strings.Trim(c.Prefix, "/")
	if prefix != "" {
		if err := ValidateKey(prefix); err != nil {
			return nil, fmt.Errorf("blob: open S3 store: prefix: %w", err)
		}
		prefix += "/"
	}
	partSize := c.PartSize
	if partSize == 0 {
		partSize = s3DefaultPartSize
	}
	if partSize < s3MinPartSize {
		return nil, fmt.Errorf("blob: open S3 store: part size %d is below S3's minimum of %d bytes", partSize, s3MinPartSize)
	}
	// The SDK's own log lines ("falling back to IMDSv1" on every probe of a
	// machine without credentials) would repeat on a worker's stderr what
	// the store's errors say once.
	lo := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{})}
	if c.Region != "" {
		lo = append(lo, config.WithRegion(c.Region))
	}
	if c.Credentials != nil {
		lo = append(lo, config.WithCredentialsProvider(c.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("blob: open S3 store: load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		if c.Endpoint == "" {
			return nil, errors.New("blob: open S3 store: no region; add region=… to the URL or set AWS_REGION")
		}
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
		// Multipart objects carry per-part checksums only, so the SDK
		// cannot check a whole-object one on Get; that is expected, not
		// worth a warning per read.
		o.DisableLogOutputChecksumValidationSkipped = true
		o.Retryer = s3Retryer(c.MaxAttempts)
		// Else the client wraps it again with AWS_MAX_ATTEMPTS.
		o.RetryMaxAttempts, o.RetryMode = 0, ""
	})
	return &s3Store{client: client, bucket: c.Bucket, prefix: prefix, partSize: partSize}, nil
}

// s3Retryer is the SDK's standard retryer with Tether's bounds; it
// replaces whatever AWS_MAX_ATTEMPTS or a profile's retry settings say,
// so the worst case in docs/storage.md holds.
func s3Retryer(attempts int) aws.Retryer {
	if attempts <= 0 {
		attempts = s3MaxAttempts
	}
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = attempts
		o.MaxBackoff = s3MaxBackoff
		o.RateLimiter = ratelimit.None
	})
}

func (s *s3Store) obj(key string) *string { return aws.String(s.prefix + key) }

// apiError extracts the S3 error code and HTTP status of err.
func apiError(err error) (code string, status int) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, status
}

// fail classifies an S3 error. Only NoSuchKey is absence: a 404 may also
// mean a missing bucket or a wrong endpoint, which are faults. A HEAD
// response has no body and so no code; head=true confirms such a 404
// against the bucket before calling it absence.
func (s *s3Store) fail(ctx context.Context, op, key string, err error, head bool) error {
	code, status := apiError(err)
	switch {
	case code == "NoSuchKey":
		return fmt.Errorf("%w: %q", ErrNotFound, key)
	case head && (code == "NotFound" || status == 404):
		if _, berr := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}); berr != nil {
			return fmt.Errorf("blob: %s %q: bucket %q does not answer: %w", op, key, s.bucket, berr)
		}
		return fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	return fmt.Errorf("blob: %s %q: %w", op, key, err)
}

func isPreconditionFailed(err error) bool {
	code, status := apiError(err)
	return code == "PreconditionFailed" || status == 412 || code == "ConditionalRequestConflict"
}

func (s *s3Store) Put(ctx context.Context, key string, r io.Reader, size int64, opts ...PutOption) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	o := applyPut(opts)
	src, h := hashedPutReader(ctx, key, r, size, o)
	pr := &partReader{r: src}
	err := s.upload(ctx, key, pr, size, o)
	if err == nil {
		return nil
	}
	if o.createOnly && isPreconditionFailed(err) {
		// The server may refuse before reading everything: hash the rest
		// so the comparison covers all of our bytes.
		if _, derr := io.Copy(io.Discard, pr); derr != nil {
			return fmt.Errorf("blob: put %q: %w", key, derr)
		}
		return s.sameContent(ctx, key, h.Sum(nil))
	}
	return fmt.Errorf("blob: put %q: %w", key, err) // never ErrNotFound
}

// sameContent resolves a create-only refusal: identical bytes are a
// successful retry, anything else is ErrExists.
func (s *s3Store) sameContent(ctx context.Context, key string, sum []byte) error {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: s.obj(key)})
	if err != nil {
		if code, _ := apiError(err); code == "NoSuchKey" {
			return fmt.Errorf("blob: put %q: a concurrent create-only write is still in progress or was deleted; retry", key)
		}
		return s.fail(ctx, "put", key, err, false)
	}
	defer out.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, out.Body); err != nil {
		return fmt.Errorf("blob: put %q: read the existing blob: %w", key, err)
	}
	if !bytes.Equal(h.Sum(nil), sum) {
		return fmt.Errorf("%w: %q holds different bytes", ErrExists, key)
	}
	return nil
}

func (s *s3Store) buf(size int64) []byte {
	if b, ok := s.bufs.Get().(*[]byte); ok && int64(len(*b)) == size {
		return *b
	}
	return make([]byte, size)
}

func (s *s3Store) release(b []byte) { s.bufs.Put(&b) }

func (s *s3Store) upload(ctx context.Context, key string, pr *partReader, size int64, o putOptions) error {
	partSize := s.partSize
	if size > 0 && size/partSize >= s3MaxParts {
		partSize = size/(s3MaxParts-1) + 1
	}
	var ifNoneMatch *string
	if o.createOnly {
		ifNoneMatch = aws.String("*")
	}
	first := s.buf(partSize)
	n, last, err := pr.fill(first)
	if err != nil {
		s.release(first)
		return err
	}
	if last {
		defer s.release(first)
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(s.bucket),
			Key:           s.obj(key),
			Body:          bytes.NewReader(first[:n]),
			ContentLength: aws.Int64(int64(n)),
			IfNoneMatch:   ifNoneMatch,
		})
		return err
	}
	return s.multipart(ctx, key, pr, first, n, partSize, ifNoneMatch)
}

func (s *s3Store) multipart(ctx context.Context, key string, pr *partReader, buf []byte, n int, partSize int64, ifNoneMatch *string) (err error) {
	cm, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:            aws.String(s.bucket),
		Key:               s.obj(key),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		s.release(buf)
		return err
	}
	defer func() {
		if err != nil {
			// Abort even when ctx is cancelled, or the parts linger
			// (invisible, but billed) until a lifecycle rule runs.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s3AbortTimeout)
			_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(s.bucket), Key: s.obj(key), UploadId: cm.UploadId,
			})
			cancel()
		}
	}()

	uctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		parts    []types.CompletedPart
		firstErr error
		wg       sync.WaitGroup
	)
	slots := make(chan struct{}, s3Concurrency)
	setErr := func(e error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = e
			cancel()
		}
		mu.Unlock()
	}
	for num := int32(1); ; num++ {
		slots <- struct{}{}
		wg.Add(1)
		go func(num int32, b []byte, n int) {
			defer func() { s.release(b); <-slots; wg.Done() }()
			out, err := s.client.UploadPart(uctx, &s3.UploadPartInput{
				Bucket:            aws.String(s.bucket),
				Key:               s.obj(key),
				UploadId:          cm.UploadId,
				PartNumber:        aws.Int32(num),
				Body:              bytes.NewReader(b[:n]),
				ContentLength:     aws.Int64(int64(n)),
				ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
			})
			if err != nil {
				setErr(err)
				return
			}
			mu.Lock()
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(num), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32})
			mu.Unlock()
		}(num, buf, n)
		if pr.last {
			break
		}
		if uctx.Err() != nil {
			break
		}
		buf = s.buf(partSize)
		var rerr error
		n, _, rerr = pr.fill(buf)
		if rerr != nil {
			s.release(buf)
			setErr(rerr)
			break
		}
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sort.Slice(parts, func(i, j int) bool { return *parts[i].PartNumber < *parts[j].PartNumber })
	_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(s.bucket),
		Key:             s.obj(key),
		UploadId:        cm.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		IfNoneMatch:     ifNoneMatch,
	})
	return err
}

// partReader fills part buffers and knows, by reading one byte ahead,
// whether the part it just filled is the last.
type partReader struct {
	r        io.Reader
	carry    byte
	hasCarry bool
	last     bool
}

func (p *partReader) fill(buf []byte) (n int, last bool, err error) {
	if p.hasCarry {
		buf[0] = p.carry
		p.hasCarry = false
		n = 1
	}
	m, err := io.ReadFull(upstream{p.r}, buf[n:])
	n += m
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		p.last = true
		return n, true, nil
	case err != nil:
		return n, false, err
	}
	var one [1]byte
	m, err = io.ReadFull(upstream{p.r}, one[:])
	switch {
	case err == io.EOF:
		p.last = true
		return n, true, nil
	case err != nil:
		return n, false, err
	}
	_ = m
	p.carry, p.hasCarry = one[0], true
	return n, false, nil
}

// upstream passes reads through, except that a source failing with
// io.ErrUnexpectedEOF (a connection cut before the body's end) fails with
// an error that wraps it: fill takes a bare io.ErrUnexpectedEOF from
// io.ReadFull for "the stream ended inside this part", which must not be
// confused with a cut.
type upstream struct{ r io.Reader }

func (u upstream) Read(b []byte) (int, error) {
	n, err := u.r.Read(b)
	if err == io.ErrUnexpectedEOF {
		err = fmt.Errorf("the stream was cut: %w", err)
	}
	return n, err
}

// Read drains what fill has not consumed (used after a refused create).
func (p *partReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if p.hasCarry {
		b[0] = p.carry
		p.hasCarry = false
		return 1, nil
	}
	if p.last {
		return 0, io.EOF
	}
	return p.r.Read(b)
}

func (s *s3Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: s.obj(key)})
	if err != nil {
		return nil, s.fail(ctx, "get", key, err, false)
	}
	return out.Body, nil
}

func (s *s3Store) Stat(ctx context.Context, key string) (Info, error) {
	if err := ValidateKey(key); err != nil {
		return Info{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: s.obj(key)})
	if err != nil {
		return Info{}, s.fail(ctx, "stat", key, err, true)
	}
	return Info{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

func (s *s3Store) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	var out []Info
	pg := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
	})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("blob: list %q: %w", prefix, err)
		}
		for _, o := range page.Contents {
			k := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
			if strings.HasSuffix(k, "/") {
				continue // a directory marker some servers list; not a blob
			}
			out = append(out, Info{Key: k, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: s.obj(key)})
	if err != nil {
		if code, _ := apiError(err); code == "NoSuchKey" {
			return nil
		}
		return fmt.Errorf("blob: delete %q: %w", key, err)
	}
	return nil
}

// Close is a no-op: the SDK's HTTP client closes idle connections itself.
func (s *s3Store) Close() error { return nil }

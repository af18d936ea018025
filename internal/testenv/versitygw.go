package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Server is a real S3-compatible server (versitygw, POSIX backend on a
// temporary directory) listening on 127.0.0.1, with one empty bucket.
type S3Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Bucket    string
	Region    string
	// Dir is the server's storage root; the bucket is Dir/Bucket.
	Dir string

	cmd      *exec.Cmd
	exited   chan struct{}
	stopOnce sync.Once
}

// VersityGW starts a fresh versitygw for the test on a free port, waits
// until it answers HTTP, creates a bucket, and stops it at cleanup. The
// root credentials are random per server and reach the server through its
// environment only. A missing or unstartable binary skips the test, or
// fails it when CI=true.
func VersityGW(t testing.TB) *S3Server {
	t.Helper()
	bin := Tool(t, "versitygw")
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	s := &S3Server{
		AccessKey: "tether-test",
		SecretKey: randomHex(t, 20),
		Bucket:    "tether-test",
		Region:    "us-east-1",
		Dir:       root,
	}
	var lastLog string
	for attempt := 0; attempt < 3; attempt++ {
		ok, log := s.start(t, bin, filepath.Join(dir, fmt.Sprintf("versitygw-%d.log", attempt)))
		if ok {
			t.Cleanup(s.Stop)
			s.createBucket(t)
			return s
		}
		lastLog = log
		if !strings.Contains(log, "address already in use") {
			break
		}
	}
	Unavailable(t, "versitygw did not start:\n%s", lastLog)
	return nil
}

// start launches the server on a fresh port and reports whether it
// answered; on failure it returns the server's log.
func (s *S3Server) start(t testing.TB, bin, logPath string) (bool, string) {
	t.Helper()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--port", addr, "--quiet", "posix", s.Dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return false, err.Error()
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.exited, s.Endpoint = cmd, exited, "http://"+addr

	// Readiness is any HTTP answer (an anonymous request gets a 403).
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return false, string(b)
		default:
		}
		if resp, err := hc.Get(s.Endpoint); err == nil {
			resp.Body.Close()
			return true, ""
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	b, _ := os.ReadFile(logPath)
	return false, "no HTTP answer within 30s\n" + string(b)
}

func (s *S3Server) createBucket(t testing.TB) {
	t.Helper()
	c := s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  s.Credentials(),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		t.Fatalf("versitygw: create bucket %s: %v", s.Bucket, err)
	}
}

// Credentials returns the server's root credentials as an SDK provider.
func (s *S3Server) Credentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")
}

// URL returns the s3:// store URL of prefix in the server's bucket. It
// carries no secret; pass Credentials() to the store.
func (s *S3Server) URL(prefix string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=%s&region=%s&path_style=true",
		s.Bucket, strings.Trim(prefix, "/"), url.QueryEscape(s.Endpoint), s.Region)
}

// Stop kills the server and waits for it to exit. It is safe to call more
// than once; tests call it to make the server unreachable.
func (s *S3Server) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		s.cmd.Process.Kill()
		<-s.exited
	})
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

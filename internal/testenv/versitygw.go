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

	bin    string
	addr   string
	logDir string
	starts int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
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
		bin:       bin,
		logDir:    dir,
	}
	var lastLog string
	for attempt := 0; attempt < 3; attempt++ {
		ok, log := s.start(fmt.Sprintf("127.0.0.1:%d", freePort(t)))
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

// start launches the server on addr and reports whether it answered; on
// failure it returns the server's log.
func (s *S3Server) start(addr string) (bool, string) {
	s.starts++
	logPath := filepath.Join(s.logDir, fmt.Sprintf("versitygw-%d.log", s.starts))
	logf, err := os.Create(logPath)
	if err != nil {
		return false, err.Error()
	}
	defer logf.Close()
	cmd := exec.Command(s.bin, "--port", addr, "--quiet", "posix", s.Dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return false, err.Error()
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	if s.addr != addr { // a restart keeps the address others are reading
		s.addr, s.Endpoint = addr, "http://"+addr
	}

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
// than once; tests call it to make the server unreachable, and Restart
// brings it back.
func (s *S3Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	cmd.Process.Kill()
	<-exited
}

// Restart starts a stopped server again on the same port, over the same
// storage directory and with the same credentials, so stores opened before
// the stop find their blobs again. The port may briefly be taken by
// another process after the stop; Restart retries for a few seconds. It
// may be called from any goroutine, and so returns its failure.
func (s *S3Server) Restart() error {
	s.Stop()
	var log string
	for range 20 {
		var ok bool
		if ok, log = s.start(s.addr); ok {
			return nil
		}
		if !strings.Contains(log, "address already in use") {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("versitygw did not restart on %s:\n%s", s.addr, log)
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

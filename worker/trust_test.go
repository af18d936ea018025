package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// buildWorker builds tether-worker into dir and returns its path.
func buildWorker(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "tether-worker")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// workerProcess is a tether-worker a test runs against a dev server, its
// log read line by line as it writes it.
type workerProcess struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when its log is drained
	mu   sync.Mutex
	log  strings.Builder
}

// startWorker starts bin as worker id against srv, on state and work
// directories of its own, with env added, and waits (up to two minutes)
// for a line of its log that matches ready: it returns the worker and
// that match's submatches. The test's failure shows the worker's log.
func startWorker(t *testing.T, bin string, srv *testenv.Server, id string, ready *regexp.Regexp, env ...string) (*workerProcess, []string) {
	t.Helper()
	dir := t.TempDir()
	w := &workerProcess{cmd: exec.Command(bin), done: make(chan struct{})}
	w.cmd.Env = append(append(os.Environ(),
		"TEMPORAL_ADDRESS="+srv.Address,
		"TETHER_STATE_DIR="+filepath.Join(dir, "state"),
		"TETHER_WORK_DIR="+filepath.Join(dir, "work"),
		"TETHER_WORKER_ID="+id,
	), env...)
	stderr, err := w.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, w.cmd.Start())
	t.Cleanup(func() { _ = w.cmd.Process.Kill(); _ = w.cmd.Wait() })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker log:\n%s", w.String())
		}
	})
	matched := make(chan []string, 1)
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			w.mu.Lock()
			w.log.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
			if m := ready.FindStringSubmatch(sc.Text()); m != nil && !seen {
				seen = true
				matched <- m
			}
		}
	}()
	select {
	case m := <-matched:
		return w, m
	case <-time.After(2 * time.Minute):
		t.Fatalf("the worker never logged a line matching %s", ready)
		return nil, nil
	}
}

// String is the worker's log so far.
func (w *workerProcess) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.log.String()
}

// stop stops the worker with SIGTERM, requires it to exit cleanly, and
// returns its whole log.
func (w *workerProcess) stop(t *testing.T) string {
	t.Helper()
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	<-w.done // the pipe is drained before Wait closes it
	require.NoError(t, w.cmd.Wait())
	return w.String()
}

// TestWorkerSaysTheBucketIsTrusted runs tether-worker on a real S3 store:
// without a checkpoint key it logs, once, that the bucket must be trusted;
// with one it says nothing of the kind and never prints the key.
func TestWorkerSaysTheBucketIsTrusted(t *testing.T) {
	srv := testenv.DevServer(t)
	s3 := testenv.VersityGW(t)
	bin := buildWorker(t, t.TempDir())
	const key = "5e2f7a1c9b3d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f"

	startLog := func(t *testing.T, checkpointKey string) string {
		w, _ := startWorker(t, bin, srv, "trust", regexp.MustCompile("worker started"),
			"TETHER_BLOB_URL="+s3.URL("workers"),
			"AWS_ACCESS_KEY_ID="+s3.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3.SecretKey,
			"TETHER_CHECKPOINT_KEY="+checkpointKey,
			"TETHER_METRICS_ADDR=", "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=",
		)
		return w.stop(t)
	}

	log := startLog(t, "")
	assert.Equal(t, 1, strings.Count(log, "checkpoints are not authenticated"), "the warning, once:\n%s", log)
	assert.Contains(t, log, "TETHER_CHECKPOINT_KEY")

	log = startLog(t, key)
	assert.NotContains(t, log, "checkpoints are not authenticated", log)
	assert.NotContains(t, log, key)
	assert.NotContains(t, log, key[:16])
}

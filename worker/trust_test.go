package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// TestWorkerSaysTheBucketIsTrusted runs tether-worker on a real S3 store:
// without a checkpoint key it logs, once, that the bucket must be trusted;
// with one it says nothing of the kind and never prints the key.
func TestWorkerSaysTheBucketIsTrusted(t *testing.T) {
	srv := testenv.DevServer(t)
	s3 := testenv.VersityGW(t)
	bin := filepath.Join(t.TempDir(), "tether-worker")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	const key = "5e2f7a1c9b3d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f"

	startLog := func(t *testing.T, checkpointKey string) string {
		dir := t.TempDir()
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(),
			"TEMPORAL_ADDRESS="+srv.Address,
			"TETHER_BLOB_URL="+s3.URL("workers"),
			"AWS_ACCESS_KEY_ID="+s3.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3.SecretKey,
			"TETHER_STATE_DIR="+filepath.Join(dir, "state"),
			"TETHER_WORK_DIR="+filepath.Join(dir, "work"),
			"TETHER_WORKER_ID=trust",
			"TETHER_CHECKPOINT_KEY="+checkpointKey,
			"TETHER_METRICS_ADDR=", "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=",
		)
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		started, done := make(chan struct{}), make(chan struct{})
		var log strings.Builder // written only by the reader until done
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stderr)
			seen := false
			for sc.Scan() {
				log.WriteString(sc.Text() + "\n")
				if !seen && strings.Contains(sc.Text(), "worker started") {
					seen = true
					close(started)
				}
			}
		}()
		select {
		case <-started:
		case <-time.After(2 * time.Minute):
			t.Fatal("the worker never started")
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		<-done // the pipe is drained before Wait closes it
		require.NoError(t, cmd.Wait())
		return log.String()
	}

	log := startLog(t, "")
	assert.Equal(t, 1, strings.Count(log, "checkpoints are not authenticated"), "the warning, once:\n%s", log)
	assert.Contains(t, log, "TETHER_CHECKPOINT_KEY")

	log = startLog(t, key)
	assert.NotContains(t, log, "checkpoints are not authenticated", log)
	assert.NotContains(t, log, key)
	assert.NotContains(t, log, key[:16])
}

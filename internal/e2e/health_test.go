package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
)

// badStoreURL is the misconfigured worker: an S3 endpoint nothing
// listens on, and no credentials.
const badStoreURL = "s3://bucket/prefix?endpoint=http://127.0.0.1:1&region=x&path_style=true"

// Item 4: a tether-worker whose store cannot take a write, read and delete
// refuses to start, with one line that says the cause once.
func TestWorkerWithABadStoreRefusesToStart(t *testing.T) {
	h := newHarness(t, "")
	bin := buildWorker(t)
	cmd := exec.Command(bin)
	cmd.Env = []string{
		"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(),
		"TEMPORAL_ADDRESS=" + h.srv.Address, "TETHER_BLOB_URL=" + badStoreURL,
		"TETHER_HOME=" + t.TempDir(), "TETHER_SANDBOX=off",
		// No AWS credentials anywhere, and no instance metadata to ask.
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the worker did not refuse to start within 2 minutes")
	}
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the worker exits non-zero: %v\n%s", err, out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	t.Logf("worker said:\n%s", out)
	assert.Regexp(t, `^tether-worker: the blob store \(TETHER_BLOB_URL\) fails a write, read and delete probe: write failed: blob: put "workers/[^/"]+/probe-\w+": .*get credentials: .*; fix the URL, its credentials or the store, then start the worker again$`, last)
	assert.Less(t, len(last), 1000, "one line, not a repeated chain")
	assert.Equal(t, 1, strings.Count(string(out), "no EC2 IMDS role found"), "the cause is said once")
	for _, l := range lines[:len(lines)-1] {
		assert.NotContains(t, l, "ERROR", "nothing else went wrong: %s", l)
	}
}

// switchable fails every operation while on, as a store whose credentials
// expired would, on one worker only.
type switchable struct {
	blob.Store
	on atomic.Bool
}

var errExpired = errors.New("get credentials: the session token expired")

func (s *switchable) fault() error {
	if s.on.Load() {
		return errExpired
	}
	return nil
}

func (s *switchable) Put(ctx context.Context, key string, r io.Reader, size int64, opts ...blob.PutOption) error {
	if err := s.fault(); err != nil {
		return err
	}
	return s.Store.Put(ctx, key, r, size, opts...)
}

func (s *switchable) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := s.fault(); err != nil {
		return nil, err
	}
	return s.Store.Get(ctx, key)
}

func (s *switchable) Stat(ctx context.Context, key string) (blob.Info, error) {
	if err := s.fault(); err != nil {
		return blob.Info{}, err
	}
	return s.Store.Stat(ctx, key)
}

func (s *switchable) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	if err := s.fault(); err != nil {
		return nil, err
	}
	return s.Store.List(ctx, prefix)
}

func (s *switchable) Delete(ctx context.Context, key string) error {
	if err := s.fault(); err != nil {
		return err
	}
	return s.Store.Delete(ctx, key)
}

// Item 4: a worker whose store starts failing while it serves hands the
// visits it had back (another worker runs them), takes no more, says it
// is unhealthy, and fails no run; once its store answers it serves again.
func TestAWorkerWhoseStoreFailsHandsVisitsBack(t *testing.T) {
	h := newHarness(t, "")
	h.noEager = true
	bad := &switchable{Store: h.blobs}
	h.workerBlobs = bad
	h.startWorker()
	sick := h.worker
	h.workerBlobs = nil
	h.startWorker()
	g := testGraph(t, "four-drafts")

	bad.on.Store(true)
	var runs []string
	for i := range 6 {
		id := fmt.Sprintf("mix%d", i)
		h.start(id, g, nil)
		runs = append(runs, id)
	}
	for _, id := range runs {
		res, err := h.result(h.c.GetWorkflow(context.Background(), id, ""))
		require.NoError(t, err, "run %s", id)
		assert.Equal(t, runstore.StatusCompleted, res.Status)
		assert.Equal(t, "writer>check>writer>check>writer>check>writer>check>done", pathString(res), "run %s: every visit once, none lost", id)
		cp, err := h.runs.Latest(context.Background(), id)
		require.NoError(t, err)
		for _, s := range cp.Path {
			assert.NotEqual(t, runstore.OutcomeFailed, s.Outcome, "run %s %s visit %d: %s", id, s.Node, s.Visit, s.Detail)
		}
	}
	// What the sick worker took, it gave back: visits (a later attempt of
	// the same activity ran on the other worker) and workflow tasks (a
	// failed task, run again elsewhere).
	handedBack, failedTasks := 0, 0
	for _, id := range runs {
		it := h.c.GetWorkflowHistory(context.Background(), id, "", false, 0)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 {
				handedBack++
			}
			if ev.GetWorkflowTaskFailedEventAttributes() != nil {
				failedTasks++
			}
		}
	}
	t.Logf("visits handed back: %d; workflow tasks given back: %d", handedBack, failedTasks)
	assert.Positive(t, handedBack+failedTasks)
	require.Error(t, sick.Healthy(), "the worker whose store fails says so")
	assert.Contains(t, sick.Healthy().Error(), "the session token expired")
	assert.Equal(t, 1, strings.Count(sick.Healthy().Error(), "the session token expired"))

	bad.on.Store(false)
	require.Eventually(t, func() bool { return sick.Healthy() == nil }, time.Minute, 100*time.Millisecond, "healthy again once its store answers")
}

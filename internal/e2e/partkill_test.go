package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/testenv"
)

// stallingProxy stands between the workers and the S3 server. Armed, it
// holds the next upload of a session blob half-sent until its client goes
// away, and says so on stalled.
type stallingProxy struct {
	*httptest.Server
	armed   atomic.Bool
	stalled chan string
	release chan struct{}
}

func newStallingProxy(t *testing.T, endpoint string) *stallingProxy {
	u, err := url.Parse(endpoint)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &stallingProxy{stalled: make(chan string, 1), release: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/sessions/") && p.armed.CompareAndSwap(true, false) {
			_, _ = io.CopyN(io.Discard, r.Body, 64)
			p.stalled <- r.URL.Path
			// No answer until the test has killed the client: the upload
			// never completes.
			<-p.release
			http.Error(w, "upload cut short", http.StatusBadGateway)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		p.releaseOnce()
		p.Close()
	})
	return p
}

func (p *stallingProxy) releaseOnce() {
	select {
	case <-p.release:
	default:
		close(p.release)
	}
}

// TestWorkerKilledMidUploadOfAPart kills the worker process with SIGKILL
// while it uploads an incremental pack of a persist slot (the S3 upload
// held half-sent by a proxy). The server starts the visit again on a new
// worker with empty disks, which restores the slot (a base and a part)
// from the store and adds its own part; a third worker, empty too,
// restores that slot of a base and two parts, and the conversation counts
// every turn.
func TestWorkerKilledMidUploadOfAPart(t *testing.T) {
	bin := buildWorker(t)
	srv := testenv.DevServer(t)
	c := srv.Client(t)
	s3 := testenv.VersityGW(t)
	proxy := newStallingProxy(t, s3.Endpoint)
	storeURL := strings.Replace(s3.URL("e2e"), url.QueryEscape(s3.Endpoint), url.QueryEscape(proxy.URL), 1)
	env := []string{
		"TEMPORAL_ADDRESS=" + srv.Address,
		"TETHER_BLOB_URL=" + storeURL,
		"AWS_ACCESS_KEY_ID=" + s3.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s3.SecretKey,
	}
	// The first visit's prompt carries 12 KB that do not compress, so the
	// slot's base outweighs the parts of the visits after it.
	pad := make([]byte, 9<<10)
	_, err := rand.Read(pad)
	require.NoError(t, err)
	g := testGraph(t, "part-kill")
	id := "killed-mid-part"
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g,
			Inputs:  map[string]any{"pad": base64.StdEncoding.EncodeToString(pad)},
			Options: runapi.Options{HeartbeatTimeout: 3 * time.Second}})
	require.NoError(t, err)
	h := &harness{t: t, srv: srv, c: c}
	blobs, err := blob.Open(context.Background(), s3.URL("e2e"), blob.WithCredentials(s3.Credentials()))
	require.NoError(t, err)
	runs := runstore.New(blobs)
	slot := func() runstore.NodeSessionSlot {
		cp, err := runs.Latest(context.Background(), id)
		require.NoError(t, err)
		return cp.NodeSessions["writer"]
	}

	a := startWorkerProcess(t, bin, env)
	h.answer(id, h.waitQuestion(id).ID, "again")
	q := h.waitQuestion(id)
	require.Equal(t, "judge-2", q.ID)
	require.Len(t, slot().Parts, 1, "visit 2 added a part to visit 1's base")

	// Visit 3 runs on a, which dies while its part is half uploaded.
	proxy.armed.Store(true)
	h.answer(id, q.ID, "again")
	select {
	case key := <-proxy.stalled:
		t.Logf("upload of %s held; killing the worker", key)
	case <-time.After(2 * time.Minute):
		t.Fatal("visit 3 never uploaded its session")
	}
	require.NoError(t, a.cmd.Process.Kill())
	_, _ = a.cmd.Process.Wait()
	proxy.releaseOnce()

	b := startWorkerProcess(t, bin, env)
	q = h.waitQuestion(id)
	require.Equal(t, "judge-3", q.ID, "visit 3 finished on the second worker")
	s3slot := slot()
	require.Len(t, s3slot.Parts, 2, "the second worker restored the base and its part, and added one")

	// A third worker with empty disks restores the slot of a base and two
	// parts.
	require.NoError(t, b.cmd.Process.Kill())
	_, _ = b.cmd.Process.Wait()
	startWorkerProcess(t, bin, env)
	h.answer(id, q.ID, "again")
	q = h.waitQuestion(id)
	require.Equal(t, "judge-4", q.ID)
	h.answer(id, q.ID, "done")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))

	cp, err := runs.Latest(context.Background(), id)
	require.NoError(t, err)
	text, _ := cp.Outputs["writer"]["text"].(string)
	require.Contains(t, text, "turn 4: draft 4", "the conversation went on from every turn before")
	final := cp.NodeSessions["writer"]
	require.Equal(t, s3slot.StateRef, final.StateRef)
	require.Len(t, final.Parts, 3)

	// Every session blob left is one a checkpoint names: the killed
	// attempt's upload never landed, or went with the sweep.
	named := cp.Refs()
	left, err := blobs.List(context.Background(), runstore.RunPrefix(id)+"sessions/")
	require.NoError(t, err)
	require.Len(t, left, 4, "a base and three parts")
	for _, o := range left {
		assert.Contains(t, named, o.Key, "session blob %s is named by no checkpoint", o.Key)
	}
}

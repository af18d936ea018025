// Package e2e runs graphs end to end: a real Temporal dev server (the
// temporal CLI), real tether workers started and stopped by the test, real
// blob stores (filesystem, and S3 on versitygw), and real agent backends.
package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/backend/scripted"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/egress"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/notify"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/internal/workerhost"
)

// testRunOptions notice a visit lost with its worker in 5 s rather than
// 30: tests replace workers often, and a task handed to a worker as it
// stops is lost until its heartbeat times out.
var testRunOptions = runapi.Options{HeartbeatTimeout: 5 * time.Second}

// harness is one dev server, one blob store, and the workers a test starts.
type harness struct {
	t      testing.TB
	srv    *testenv.Server
	c      client.Client
	blobs  blob.Store
	runs   *runstore.Store
	worker *workerhost.Host
	n      int
	// workerBlobs is the store workers use; nil means blobs.
	workerBlobs blob.Store
	// noEager spreads activities over all workers.
	noEager bool
	// backends builds the backends of each new worker.
	backends func(t testing.TB) backend.Config
	// tmp holds the workers' roots.
	tmp string
	// checkpointKey is what new workers sign checkpoints with (nil: none).
	checkpointKey []byte
	// sandbox confines the workers' agents and tools (nil: unconfined).
	sandbox *sandbox.Sandbox
	// scriptedIDs, when set, mints the session ids of the scripted
	// backend of new workers, so a test can name one before it exists.
	scriptedIDs func() string
	// notify sends the new workers' notices (nil: none).
	notify *notify.Sender
	// blobURL is the store's TETHER_BLOB_URL, for processes the test
	// starts (tether console).
	blobURL string
	// hostOptions, when set, changes the options of each new worker.
	hostOptions func(*workerhost.Options)
	mu          sync.Mutex
}

func newHarness(t testing.TB, blobURL string) *harness {
	t.Helper()
	srv := testenv.DevServer(t)
	// No conversation can come from a home directory: HOME is empty.
	t.Setenv("HOME", t.TempDir())
	h := &harness{t: t, srv: srv, c: srv.Client(t), tmp: t.TempDir()}
	if blobURL == "" {
		blobURL = "file://" + t.TempDir()
	}
	b, err := blob.Open(context.Background(), blobURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	h.blobs, h.blobURL = b, blobURL
	h.runs = runstore.New(b)
	h.backends = func(testing.TB) backend.Config { return backend.Config{} }
	h.confine()
	return h
}

// reviseUntil answers question qid of run id "revise" in each round
// before last, and "approve" in round last.
func (h *harness) reviseUntil(id, qid string, round, last int) {
	h.t.Helper()
	answer := "revise"
	if round == last {
		answer = "approve"
	}
	h.answer(id, qid, answer)
}

// fileHarness is a harness on a file store in a fresh directory, with a
// worker started; it returns the harness and that directory.
func fileHarness(t *testing.T) (*harness, string) {
	t.Helper()
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	h.startWorker()
	return h, dir
}

// cliHarness is fileHarness with the tether CLI in this process
// (tetherCode) pointed at its server and store.
func cliHarness(t *testing.T) (*harness, string) {
	t.Helper()
	h, dir := fileHarness(t)
	h.useCLI(t)
	return h, dir
}

// useCLI points the tether CLI run in this process (tetherCode) at the
// harness's server and blob store for the rest of the test.
func (h *harness) useCLI(t testing.TB) {
	t.Setenv("TEMPORAL_ADDRESS", h.srv.Address)
	t.Setenv("TETHER_BLOB_URL", h.blobURL)
}

// s3Store starts a real S3 server (versitygw) for the test, hands its
// credentials to the AWS chain, and returns the blob store URL of bucket.
func s3Store(t *testing.T, bucket string) string {
	t.Helper()
	s3 := testenv.VersityGW(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3.SecretKey)
	return s3.URL(bucket)
}

// startWorker starts a worker with an empty state root of its own, as a
// freshly scheduled pod would have; it returns that root.
func (h *harness) startWorker() string {
	h.t.Helper()
	h.mu.Lock()
	h.n++
	h.mu.Unlock()
	root := filepath.Join(h.t.TempDir(), fmt.Sprintf("worker-%d", h.n))
	bs, err := backend.New(h.backendConfig(root))
	require.NoError(h.t, err)
	if h.scriptedIDs != nil {
		for i, b := range bs {
			if b.Name() == "scripted" {
				bs[i] = scripted.New(scripted.Options{NewID: h.scriptedIDs, Policy: catalogue.SessionPolicy()})
			}
		}
	}
	o := workerhost.Options{
		ID: fmt.Sprintf("w%d-%d", h.n, time.Now().UnixNano()), Blobs: h.workerStore(), Backends: bs,
		StateDir: filepath.Join(root, "state"), WorkDir: filepath.Join(root, "work"),
		Logger: testLogger(), DisableEagerActivities: h.noEager, CheckpointKey: h.checkpointKey, Sandbox: h.sandbox,
		Notify: h.notify, Versioning: e2eVersioning(),
	}
	if h.hostOptions != nil {
		h.hostOptions(&o)
	}
	w, err := workerhost.Start(h.c, o)
	require.NoError(h.t, err)
	h.worker = w
	h.t.Cleanup(w.Stop)
	return root
}

// backendConfig is the backends of the worker rooted at root: the
// harness's configuration, with a HOME of the worker's own for the agent
// CLIs, as a freshly scheduled pod would have.
func (h *harness) backendConfig(root string) backend.Config {
	cfg := h.backends(h.t)
	cfg.Home = filepath.Join(root, "home")
	cfg.Sandbox = h.sandbox
	return cfg
}

func (h *harness) workerStore() blob.Store {
	if h.workerBlobs != nil {
		return h.workerBlobs
	}
	return h.blobs
}

// stopWorker stops the current worker; its state root is gone with it.
func (h *harness) stopWorker() {
	h.t.Helper()
	if h.worker != nil {
		h.worker.Stop()
		h.worker = nil
	}
}

func (h *harness) start(id string, g *graph.Graph, inputs map[string]any) client.WorkflowRun {
	h.t.Helper()
	run, err := h.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: runapi.TaskQueue,
	}, runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Inputs: inputs, Options: testRunOptions})
	require.NoError(h.t, err)
	return run
}

func (h *harness) state(id string) *runapi.State {
	h.t.Helper()
	st, err := h.query(id, time.Minute)
	require.NoError(h.t, err)
	return st
}

// query asks the run for its state, waiting up to wait for the answer. A
// worker that has just started answers a query only after it replayed the
// run's history, which on a loaded machine can take longer than a poll.
func (h *harness) query(id string, wait time.Duration) (*runapi.State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	v, err := h.c.QueryWorkflow(ctx, id, "", runapi.QueryState)
	if err != nil {
		return nil, err
	}
	var st runapi.State
	if err := v.Get(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

// waitQuestion polls the state query until a question is pending; a run
// that ends instead fails the test at once, with the run's error.
// runWait bounds a wait for a run to reach a question or its end: far
// beyond what it takes, since it only catches a run that never gets there.
// A fix-the-test run on gemini (four visits, each a new worker starting a
// node CLI) took over 2 minutes to reach its question on a machine loaded
// to 20 (`make test-loaded` beside mutation testing), and one on opencode
// spends about a minute per visit on 2 loaded cores (docs/backends.md).
const runWait = 10 * time.Minute

func (h *harness) waitQuestion(id string) runapi.PendingQuestion {
	h.t.Helper()
	deadline := time.Now().Add(runWait)
	var lastErr error
	for time.Now().Before(deadline) {
		// A query that times out is asked again (make test-loaded: at
		// load 20, a worker replaying the history after a kill did not
		// answer within 10 s); the run's wait bounds them all.
		st, err := h.query(id, 30*time.Second)
		if err != nil {
			lastErr = err
			time.Sleep(time.Second)
			continue
		}
		if len(st.Questions) > 0 {
			return st.Questions[0]
		}
		switch st.Status {
		case runstore.StatusCompleted, runstore.StatusFailed, runstore.StatusFailedResumable:
			var path []string
			for _, s := range st.Path {
				path = append(path, s.Node)
			}
			h.t.Fatalf("run %s ended %s without a question (path %s): %s", id, st.Status, strings.Join(path, ">"), st.Error)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.t.Fatalf("run %s asked no question within %s (last query error: %v)", id, runWait, lastErr)
	return runapi.PendingQuestion{}
}

func (h *harness) answer(id, qid, text string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := h.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: runapi.UpdateAnswer,
		Args: []any{runapi.Answer{QuestionID: qid, Text: text}}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	require.NoError(h.t, err)
	require.NoError(h.t, u.Get(ctx, nil))
}

func (h *harness) result(run client.WorkflowRun) (*runapi.GraphRunResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runWait)
	defer cancel()
	var res runapi.GraphRunResult
	err := run.Get(ctx, &res)
	return &res, err
}

// recordHistory exports a finished run's history with the temporal CLI, as
// a user would, into testdata/histories/NAME.json. It only writes when
// TETHER_RECORD_HISTORIES=1 and never overwrites a committed history.
func (h *harness) recordHistory(name, workflowID string) {
	h.t.Helper()
	h.recordHistoryRun(name, workflowID, "")
}

// recordHistoryRun is recordHistory for one execution (run) of
// workflowID; "" is its latest.
func (h *harness) recordHistoryRun(name, workflowID, run string) {
	h.t.Helper()
	if os.Getenv("TETHER_RECORD_HISTORIES") != "1" {
		return
	}
	path := filepath.Join(testenv.Root(), "testdata", "histories", name+".json")
	if _, err := os.Stat(path); err == nil {
		h.t.Logf("history %s exists; not overwriting (histories are never edited)", path)
		return
	}
	args := []string{"workflow", "show", "--address", h.srv.Address, "--workflow-id", workflowID, "--output", "json"}
	if run != "" {
		args = append(args, "--run-id", run)
	}
	out, err := exec.Command(testenv.Tool(h.t, "temporal"), args...).Output()
	require.NoError(h.t, err)
	require.NoError(h.t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(h.t, os.WriteFile(path, out, 0o644))
	h.t.Logf("recorded %s", path)
}

// parseGraph parses the graph src, named name in errors, and requires it
// to be valid.
func parseGraph(t *testing.T, src, name string) *graph.Graph {
	t.Helper()
	g, err := graph.Parse([]byte(src), name)
	require.NoError(t, err, src)
	require.False(t, graph.Validate(g).HasErrors(), graph.Validate(g).String())
	return g
}

// graphYAML is the graph testdata/graphs/name.yaml, with each of the
// placeholders named in sub (old, new, old, new, ...) replaced: every one
// must stand in the file, so a renamed placeholder fails here rather than
// reaching the worker as text.
func graphYAML(t testing.TB, name string, sub ...string) string {
	t.Helper()
	require.Zero(t, len(sub)%2, "graphYAML takes old, new pairs")
	b, err := os.ReadFile(filepath.Join("testdata", "graphs", name+".yaml"))
	require.NoError(t, err)
	src := string(b)
	for i := 0; i < len(sub); i += 2 {
		require.Contains(t, src, sub[i], "testdata/graphs/%s.yaml", name)
	}
	return strings.NewReplacer(sub...).Replace(src)
}

// graphFile writes graphYAML(name, sub...) into a fresh directory, as
// name.yaml, and returns its path: for the tether CLI.
func graphFile(t testing.TB, name string, sub ...string) string {
	t.Helper()
	return writeGraph(t, name+".yaml", graphYAML(t, name, sub...))
}

// testGraph is graphYAML(name, sub...) parsed (not validated: a test may
// start what validation would refuse).
func testGraph(t testing.TB, name string, sub ...string) *graph.Graph {
	t.Helper()
	g, err := graph.Parse([]byte(graphYAML(t, name, sub...)), name+".yaml")
	require.NoError(t, err)
	return g
}

func loadGraph(t *testing.T, rel string) *graph.Graph {
	t.Helper()
	g, err := graph.ParseFile(filepath.Join(testenv.Root(), rel))
	require.NoError(t, err)
	require.False(t, graph.Validate(g).HasErrors(), graph.Validate(g).String())
	return g
}

func pathString(res *runapi.GraphRunResult) string {
	var p []string
	for _, s := range res.Path {
		p = append(p, s.Node)
	}
	return strings.Join(p, ">")
}

// hookedBlobs fails a Put when its hook returns an error: an injected
// store fault in front of a real store.
type hookedBlobs struct {
	blob.Store
	hook func(key string) error
}

func (b *hookedBlobs) Put(ctx context.Context, key string, r io.Reader, size int64, opts ...blob.PutOption) error {
	if err := b.hook(key); err != nil {
		return err
	}
	return b.Store.Put(ctx, key, r, size, opts...)
}

// wrapBlobs puts hook in front of the workers' blob store (not the test's
// own view of it, h.runs).
func (h *harness) wrapBlobs(hook func(key string) error) {
	h.workerBlobs = &hookedBlobs{Store: h.blobs, hook: hook}
}

// tether runs the tether CLI in process against this harness's server and
// the file store at dir, and returns its output (stdout and stderr); it
// fails the test on a non-zero exit.
func (h *harness) tether(t *testing.T, dir string, args ...string) string {
	t.Helper()
	t.Setenv("TEMPORAL_ADDRESS", h.srv.Address)
	t.Setenv("TETHER_BLOB_URL", "file://"+dir)
	code, out := tetherCode(t, args...)
	require.Equal(t, cli.ExitOK, code, "tether %v: %s", args, out)
	return out
}

// confine makes the workers started from now on confine their agents and
// tools as a production worker does by default: the small helper under
// bubblewrap, with the dev server's frontend and HTTP API declared as the
// worker's services. newHarness calls it; a test that needs unconfined
// workers sets h.sandbox to nil.
func (h *harness) confine(opts ...sandboxtest.Option) {
	h.t.Helper()
	opts = append(opts, sandboxtest.WithServices(
		egress.Service{Name: "Temporal frontend", Addr: h.srv.Address},
		egress.Service{Name: "Temporal frontend HTTP API", Addr: h.srv.HTTPAddress}))
	h.sandbox = sandboxtest.New(h.t, opts...)
}

// testLogger keeps workers quiet unless TETHER_TEST_LOG=1.
func testLogger() *slog.Logger {
	if os.Getenv("TETHER_TEST_LOG") == "1" {
		return slog.Default()
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

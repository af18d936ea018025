package workerhost_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/internal/workerhost"
)

// startVersioned starts a worker of build in mode on the dev server c
// talks to, and says how long Start took.
func startVersioned(t *testing.T, c client.Client, id, build string, mode workerhost.VersioningMode) (*workerhost.Host, time.Duration) {
	t.Helper()
	return startHost(t, c, workerhost.Options{
		ID: id, Logger: slog.New(slog.DiscardHandler),
		Versioning: workerhost.Versioning{Mode: mode, Deployment: "tether", BuildID: build, RoutingEvery: 500 * time.Millisecond},
	})
}

// startHost starts a worker with opts on the server c talks to, with a
// file store, the backends, and state and work directories of its own;
// it says how long Start took. The worker stops when the test ends.
func startHost(t *testing.T, c client.Client, opts workerhost.Options) (*workerhost.Host, time.Duration) {
	t.Helper()
	blobs, err := blob.Open(t.Context(), "file://"+t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = blobs.Close() })
	bs, err := backend.New(backend.Config{})
	require.NoError(t, err)
	root := t.TempDir()
	opts.Blobs, opts.Backends = blobs, bs
	opts.StateDir, opts.WorkDir = filepath.Join(root, "state"), filepath.Join(root, "work")
	began := time.Now()
	h, err := workerhost.Start(c, opts)
	require.NoError(t, err)
	t.Cleanup(h.Stop)
	return h, time.Since(began)
}

// startRun starts run id of graph src on the server c talks to.
func startRun(ctx context.Context, t *testing.T, c client.Client, id, src string) client.WorkflowRun {
	t.Helper()
	g, err := graph.Parse([]byte(src), id+".yaml")
	require.NoError(t, err)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g})
	require.NoError(t, err)
	return run
}

// current is the deployment's current build ("" when none).
func current(t *testing.T, c client.Client) string {
	t.Helper()
	d, err := c.WorkerDeploymentClient().GetHandle("tether").Describe(t.Context(), client.WorkerDeploymentDescribeOptions{})
	if err != nil || d.Info.RoutingConfig.CurrentVersion == nil {
		return ""
	}
	return d.Info.RoutingConfig.CurrentVersion.BuildID
}

// On a server where the deployment has no current build, the first
// worker in auto mode makes its own build current before Start returns,
// so a run started at once is dispatched, and pinned to that build. A
// worker of another build does not take over while the current build's
// workers poll, nor does a worker in manual mode ever.
func TestAVersionedWorkerServesANewServer(t *testing.T) {
	srv := testenv.DevServer(t)
	c := srv.Client(t)
	_, took := startVersioned(t, c, "a1", "build-a", workerhost.VersioningAuto)
	t.Logf("Start of the first versioned worker on a new server took %s", took)
	assert.Equal(t, "build-a", current(t, c), "the first auto worker made its build current")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	run := startRun(ctx, t, c, "pinned-run", `
name: one
start: w
nodes:
  - {id: w, kind: agent, backend: scripted, prompt: hi, script: [hello]}
  - {id: done, kind: end}
edges: [{from: w, to: done}]
`)
	require.NoError(t, run.Get(ctx, nil))
	d, err := c.DescribeWorkflow(ctx, "pinned-run", "")
	require.NoError(t, err)
	vi := d.RawResponse.GetWorkflowExecutionInfo().GetVersioningInfo()
	assert.Equal(t, enumspb.VERSIONING_BEHAVIOR_PINNED, vi.GetBehavior())
	assert.Equal(t, "build-a", vi.GetDeploymentVersion().GetBuildId())

	_, _ = startVersioned(t, c, "b1", "build-b", workerhost.VersioningAuto)
	_, _ = startVersioned(t, c, "m1", "build-m", workerhost.VersioningManual)
	time.Sleep(2 * time.Second) // several routing reads of both
	assert.Equal(t, "build-a", current(t, c), "a worker of another build does not take over while the current build's workers poll")
	assert.Contains(t, fmt.Sprint(versions(t, c)), "build-b")
}

// A worker in manual mode leaves a deployment without a current build as
// it is: new runs wait for someone to set one.
func TestAManualWorkerLeavesRoutingAlone(t *testing.T) {
	srv := testenv.DevServer(t)
	c := srv.Client(t)
	_, _ = startVersioned(t, c, "m1", "build-m", workerhost.VersioningManual)
	time.Sleep(2 * time.Second)
	assert.Empty(t, current(t, c))
}

// versions lists the deployment's builds.
func versions(t *testing.T, c client.Client) []string {
	t.Helper()
	d, err := c.WorkerDeploymentClient().GetHandle("tether").Describe(t.Context(), client.WorkerDeploymentDescribeOptions{})
	require.NoError(t, err)
	var out []string
	for _, v := range d.Info.VersionSummaries {
		out = append(out, v.Version.BuildID)
	}
	return out
}

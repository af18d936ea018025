package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/internal/upgradeprobe"
	"github.com/tether-run/tether/internal/workerhost"
	"github.com/tether-run/tether/internal/workspace"
)

// upgradeGraph is the graph upgrade with its rounds, the tool visit after
// which it asks, and the tool's sleep in seconds.
func upgradeGraph(t *testing.T, rounds, askAt int, sleep string) *graph.Graph {
	t.Helper()
	return parseGraph(t, graphYAML(t, "upgrade", "ROUNDS", strconv.Itoa(rounds), "ASK_AT", strconv.Itoa(askAt), "SLEEP", sleep), "upgrade.yaml")
}

// upgradeReply is the writer's last reply after n visits of upgradeGraph.
func upgradeReply(n int) string {
	s := fmt.Sprintf("t%d [", n)
	for i := 1; i < n; i++ {
		s += fmt.Sprintf("step %d;", i)
	}
	return s + "]"
}

// upgradeFiles is the workspace of upgradeGraph after n rounds.
func upgradeFiles(n int) map[string]string {
	want := map[string]string{}
	var log strings.Builder
	for v := 1; v <= n; v++ {
		want[fmt.Sprintf("f%d.txt", v)] = fmt.Sprintf("v%d\n", v)
		fmt.Fprintf(&log, "%d\n", v)
	}
	want["log.txt"] = log.String()
	return want
}

// A rolling upgrade on the dev server: runs start on build A; build B,
// whose workflow code differs in a way a replay would refuse, starts, is
// ramped and made current; a run in the middle of its visits finishes the
// visit on A and moves between two visits by itself; runs waiting for a
// person move when tether upgrade-runs asks them; A drains and its worker
// stops; then every run is answered and completes on B with every turn
// of its conversation and every file, and no workflow task failed.
func TestRollingUpgradeMovesRunsAtTheirSafePoints(t *testing.T) {
	store := t.TempDir()
	h := newHarness(t, "file://"+store)
	ctx := t.Context()
	a := workerhost.Versioning{Mode: workerhost.VersioningAuto, Deployment: runapi.DefaultDeployment, BuildID: "upgrade-a", RoutingEvery: 500 * time.Millisecond}
	h.hostOptions = func(o *workerhost.Options) { o.Versioning = a }
	h.startWorker()
	workerA := h.worker

	waiting := upgradeGraph(t, 3, 1, "0")
	// busy-1 must still be in its visits when B becomes current: B's
	// worker, its ramp and the switch took 7 s on a loaded fresh clone,
	// where four rounds of 2 s had ended it before.
	busy := upgradeGraph(t, 6, 99, "2")
	runs := map[string]int{"wait-1": 3, "plain-wait": 3, "busy-1": 6}
	h.start("wait-1", waiting, nil)
	h.start("plain-wait", waiting, nil)
	h.start("busy-1", busy, nil)
	h.waitQuestion("wait-1")
	h.waitQuestion("plain-wait")
	require.Equal(t, "running", h.state("busy-1").Status)

	b := workerhost.Versioning{Mode: workerhost.VersioningManual, Deployment: runapi.DefaultDeployment, BuildID: "upgrade-b", RoutingEvery: 500 * time.Millisecond}
	// B's workflow code differs (internal/upgradeprobe): a new activity
	// before every visit, but for the "plain-" runs, whose executions on
	// B are the replay histories.
	h.hostOptions = func(o *workerhost.Options) {
		o.Versioning = b
		o.Interceptors = append(o.Interceptors, upgradeprobe.New(func(id string) bool { return strings.HasPrefix(id, "plain-") }))
	}
	h.startWorker()
	dep := h.c.WorkerDeploymentClient().GetHandle(runapi.DefaultDeployment)
	require.Eventually(t, func() bool {
		_, err := dep.SetRampingVersion(ctx, client.WorkerDeploymentSetRampingVersionOptions{BuildID: "upgrade-b", Percentage: 25})
		return err == nil
	}, time.Minute, 200*time.Millisecond, "ramp build B")
	_, err := dep.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: "upgrade-b"})
	require.NoError(t, err)
	switched := time.Now()

	out := h.tether(t, store, "upgrade-runs", "--wait", "2m")
	t.Logf("tether upgrade-runs:\n%s", out)
	for _, id := range []string{"wait-1", "plain-wait"} {
		assert.Regexp(t, id+`: moved to build upgrade-b in \d`, out)
	}
	assert.Contains(t, out, "busy-1: on build upgrade-a, moves once its visit is done")

	require.Eventually(t, func() bool { return pinnedTo(t, h.c, "busy-1") == "upgrade-b" }, 2*time.Minute, 200*time.Millisecond, "busy-1 moves after its visit")
	require.Eventually(t, func() bool {
		v, err := dep.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: "upgrade-a"})
		return err == nil && v.Info.DrainageInfo != nil && v.Info.DrainageInfo.DrainageStatus == client.WorkerDeploymentVersionDrainageStatusDrained
	}, 2*time.Minute, 500*time.Millisecond, "build A drains")
	t.Logf("build A drained %s after build B became current", time.Since(switched).Round(100*time.Millisecond))
	// `tether workers` reads the deployment's summary of its versions,
	// which follows the version's own description by a moment.
	drainedA := regexp.MustCompile(`upgrade-a\s+-\s+1\s+0\s+0\s+drained`)
	workers := h.tether(t, store, "workers")
	for deadline := time.Now().Add(30 * time.Second); !drainedA.MatchString(workers) && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		workers = h.tether(t, store, "workers")
	}
	t.Logf("tether workers:\n%s", workers)
	assert.Regexp(t, `upgrade-b\s+current\s+1\s+[23]\s+2\s`, workers)
	assert.Regexp(t, drainedA, workers)
	workerA.Stop()

	for _, id := range []string{"wait-1", "plain-wait"} {
		q := h.waitQuestion(id)
		assert.Equal(t, "ask-1", q.ID, "the question kept its id")
		h.answer(id, q.ID, "go on")
	}
	for id, rounds := range runs {
		res, err := h.result(h.c.GetWorkflow(ctx, id, ""))
		require.NoError(t, err, id)
		assert.Equal(t, "completed", res.Status, id)
		cp, err := h.runs.Latest(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, upgradeReply(rounds), fmt.Sprint(cp.Outputs["writer"]["text"]), "%s: the writer's conversation holds every turn", id)
		assert.Equal(t, upgradeFiles(rounds), exportFiles(t, h, id), "%s: every file", id)
		assert.Equal(t, "upgrade-b", pinnedTo(t, h.c, id), id)
		checkBuilds(t, h.c, id)
	}
	execs := executions(t, h.c, "plain-wait")
	require.Len(t, execs, 2)
	h.recordHistoryRun("move-while-waiting", "plain-wait", execs[0])
	h.recordHistoryRun("move-arrival", "plain-wait", execs[1])
	h.recordHistoryRun("move-between-visits", "busy-1", executions(t, h.c, "busy-1")[0])
}

// checkBuilds checks, in every execution of run id, that no workflow task
// failed, that each execution's tasks were completed by one build (A
// before the move, B after it, but for the prologue of the execution a
// move started, whose first task A ran), and that only B ran the probe.
func checkBuilds(t *testing.T, c client.Client, id string) {
	t.Helper()
	for i, run := range executions(t, c, id) {
		builds := map[string]int{}
		probes := 0
		var first string
		iter := c.GetWorkflowHistory(t.Context(), id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			e, err := iter.Next()
			require.NoError(t, err)
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
				t.Errorf("run %s, execution %d: workflow task failed: %s", id, i, e.GetWorkflowTaskFailedEventAttributes().GetFailure().GetMessage())
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				b := e.GetWorkflowTaskCompletedEventAttributes().GetDeploymentVersion().GetBuildId()
				if first == "" {
					first = b
				}
				builds[b]++
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if summary(e) == upgradeprobe.Summary {
					probes++
				}
			}
		}
		switch {
		case i == 0:
			assert.Equal(t, map[string]int{"upgrade-a": builds["upgrade-a"]}, builds, "%s: its first execution ran on A alone", id)
			assert.Zero(t, probes, "%s: A has no probe", id)
		default:
			assert.Equal(t, "upgrade-a", first, "%s: the execution a move started began on A, which pinned it to B", id)
			assert.LessOrEqual(t, builds["upgrade-a"], 2, "%s: A ran the move's prologue only", id)
			assert.Greater(t, builds["upgrade-b"], 0, id)
			if !strings.HasPrefix(id, "plain-") {
				assert.Positive(t, probes, "%s: B ran its new activity", id)
			}
		}
	}
}

// summary is an event's summary as the Web UI shows it.
func summary(e *historypb.HistoryEvent) string {
	p := e.GetUserMetadata().GetSummary()
	if p == nil {
		return ""
	}
	var s string
	_ = json.Unmarshal(p.GetData(), &s)
	return s
}

// executions are the Temporal run ids of workflow id, oldest first.
func executions(t *testing.T, c client.Client, id string) []string {
	t.Helper()
	var out []string
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q", id)})
		if err != nil {
			return false
		}
		out = out[:0]
		for _, e := range resp.GetExecutions() {
			out = append([]string{e.GetExecution().GetRunId()}, out...)
		}
		return len(out) > 0 && resp.GetExecutions()[0].GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, 30*time.Second, 200*time.Millisecond)
	return out
}

// pinnedTo is the build run id's current execution is pinned to.
func pinnedTo(t *testing.T, c client.Client, id string) string {
	t.Helper()
	d, err := c.DescribeWorkflow(t.Context(), id, "")
	require.NoError(t, err)
	vi := d.RawResponse.GetWorkflowExecutionInfo().GetVersioningInfo()
	if o := vi.GetVersioningOverride().GetPinned(); o != nil {
		return o.GetVersion().GetBuildId()
	}
	return vi.GetDeploymentVersion().GetBuildId()
}

// exportFiles is run id's workspace at its last checkpoint.
func exportFiles(t *testing.T, h *harness, id string) map[string]string {
	t.Helper()
	cp, err := h.runs.Latest(t.Context(), id)
	require.NoError(t, err)
	require.NotNil(t, cp.Workspace)
	dir := t.TempDir()
	require.NoError(t, workspace.Export(context.Background(), h.blobs, id, cp.Workspace, dir, false, workspace.Limits{}))
	got := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		got[rel] = string(b)
		return err
	}))
	return got
}

// Versioned workers whose deployment has no current build take no new
// run (a worker in manual mode never sets one): tether run --follow says
// so, and what to do, and the run starts once a build is made current.
func TestARunWithoutACurrentBuildSaysWhy(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	h.useCLI(t)
	h.hostOptions = func(o *workerhost.Options) {
		o.Versioning = workerhost.Versioning{Mode: workerhost.VersioningManual, Deployment: runapi.DefaultDeployment, BuildID: "manual-1"}
	}
	h.startWorker()
	file := graphFile(t, "ask")
	var follow testenv.SyncBuffer
	done := make(chan int, 1)
	go func() { done <- cli.Main([]string{"run", file, "--id", "nc-1", "--follow"}, &follow, &follow) }()
	waitFor(t, &follow, "but the deployment has no current build, so none takes the run", time.Minute)
	assert.Contains(t, follow.String(), "temporal worker deployment set-current-version --deployment-name tether --build-id BUILD")
	require.Eventually(t, func() bool {
		_, err := h.c.WorkerDeploymentClient().GetHandle(runapi.DefaultDeployment).SetCurrentVersion(t.Context(), client.WorkerDeploymentSetCurrentVersionOptions{BuildID: "manual-1"})
		return err == nil
	}, time.Minute, 200*time.Millisecond)
	q := h.waitQuestion("nc-1")
	h.answer("nc-1", q.ID, "yes")
	select {
	case code := <-done:
		assert.Equal(t, cli.ExitOK, code, follow.String())
	case <-time.After(runWait):
		t.Fatalf("the run did not end: %s", follow.String())
	}
	assert.Equal(t, "manual-1", pinnedTo(t, h.c, "nc-1"))
}

// Workers replaced without a rollout (every worker of a build stopped,
// workers of another build started) leave the old build's runs with no
// worker: tether upgrade-runs --replay (and --replay-stranded, once
// Temporal no longer lists the old workers) pins them to the current
// build, which replays them (the builds here are the same code) and
// carries them to their end. The new build's worker here read its
// deployment's routing once, before it was made current, and not again:
// the run, signalled by a command that read the switch, does not move
// back to the build before on that stale view (which left it waiting for
// workers that were gone), but waits on, and ends on the new build.
func TestStrandedRunsReplayOnTheCurrentBuild(t *testing.T) {
	store := t.TempDir()
	h := newHarness(t, "file://"+store)
	h.hostOptions = func(o *workerhost.Options) {
		o.Versioning = workerhost.Versioning{Mode: workerhost.VersioningAuto, Deployment: runapi.DefaultDeployment, BuildID: "gone-a", RoutingEvery: 500 * time.Millisecond}
	}
	h.startWorker()
	h.start("stranded-1", upgradeGraph(t, 2, 1, "0"), nil)
	h.waitQuestion("stranded-1")
	h.stopWorker()
	h.hostOptions = func(o *workerhost.Options) {
		o.Versioning = workerhost.Versioning{Mode: workerhost.VersioningManual, Deployment: runapi.DefaultDeployment, BuildID: "new-b", RoutingEvery: time.Hour}
	}
	h.startWorker()
	require.Eventually(t, func() bool {
		rt, ok := h.worker.Routing()
		return ok && rt.Current == "gone-a"
	}, time.Minute, 100*time.Millisecond, "the new worker reads gone-a as current, once")
	require.Eventually(t, func() bool {
		_, err := h.c.WorkerDeploymentClient().GetHandle(runapi.DefaultDeployment).SetCurrentVersion(t.Context(), client.WorkerDeploymentSetCurrentVersionOptions{BuildID: "new-b"})
		return err == nil
	}, time.Minute, 200*time.Millisecond)
	// Temporal lists the stopped worker's pollers for 90 s more: name
	// the build.
	out := h.tether(t, store, "upgrade-runs", "--replay", "gone-a")
	assert.Contains(t, out, "stranded-1: was on build gone-a; pinned to build new-b, which replays it now")
	q := h.waitQuestion("stranded-1")
	h.answer("stranded-1", q.ID, "go on")
	res, err := h.result(h.c.GetWorkflow(t.Context(), "stranded-1", ""))
	require.NoError(t, err)
	assert.Equal(t, "completed", res.Status)
	assert.Equal(t, "new-b", pinnedTo(t, h.c, "stranded-1"))
	rt, _ := h.worker.Routing()
	assert.Equal(t, "gone-a", rt.Current, "the worker's view stayed stale throughout")
	execs := executions(t, h.c, "stranded-1")
	assert.Len(t, execs, 1, "the run never moved")
	cp, err := h.runs.Latest(t.Context(), "stranded-1")
	require.NoError(t, err)
	h.recordHistoryRun("move-on-fresh-routing", "stranded-1", execs[0])
	assert.Equal(t, upgradeReply(2), fmt.Sprint(cp.Outputs["writer"]["text"]))
}

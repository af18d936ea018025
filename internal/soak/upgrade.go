package soak

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/upgradeprobe"
)

// With Options.Upgrade the soak rolls the cluster onto another build in
// the middle of its load (scripts/cluster.sh upgrade: start workers of
// the new build, ramp it, make it current, tether upgrade-runs, wait until
// the old build is drained, stop its workers), and holds the answers to
// its runs' questions until the upgrade is over, so that runs wait for a
// person across it. The new build is this source built with a test-only
// change of workflow code (make upgrade-probe: one more activity before
// every visit), which the old build could not replay and which could not
// replay the old build's histories: only a run that moved by continuing
// as new may run on it. Afterwards every execution of every run is read
// back: no workflow task failed as non-deterministic, every run ended on
// the new build, and which runs moved, and where.

// Upgrade says when to upgrade and to what.
type Upgrade struct {
	// Bin is the new build's tether-worker; empty: no upgrade.
	Bin string
	// At is how far into the soak the upgrade starts.
	At time.Duration
	// RampFor is how long the new build ramps before it is made current.
	RampFor time.Duration
}

// Upgraded is what the upgrade did.
type Upgraded struct {
	From, To string
	// CurrentAt is when the new build became current, as Tether's task
	// queue says.
	CurrentAt time.Time
	// Took is the whole rollout; Drained the time from the new build
	// being current to the old one being drained (Temporal's word).
	Took, Drained time.Duration
	// Moves are the runs tether upgrade-runs saw move, and how long each
	// took from being asked.
	Moves map[string]time.Duration
	// MovedWaiting and MovedBetween count the runs that moved while they
	// waited for a person, and between two visits; Probes the new build's
	// new activities the runs ran; Executions every execution of every
	// run.
	MovedWaiting, MovedBetween, Probes, Executions int
	Output                                         string
	Skipped                                        string
}

// output is what scripts/cluster.sh upgrade said ("" without an upgrade).
func (u *Upgraded) output() string {
	if u == nil {
		return ""
	}
	return u.Output
}

// retire marks workers the upgrade is about to replace: the kills leave
// them alone, and heal does not start them again.
func (s *Soak) retire(ids []int) {
	s.workersMu.Lock()
	defer s.workersMu.Unlock()
	for _, i := range ids {
		s.retired[i] = true
	}
}

// liveWorkers are the workers that should run: every worker the cluster
// started (run/worker-I.bin), but those an upgrade retired.
func (s *Soak) liveWorkers() []int {
	s.workersMu.Lock()
	defer s.workersMu.Unlock()
	files, _ := filepath.Glob(filepath.Join(s.o.ClusterDir, "run", "worker-*.bin"))
	var out []int
	for _, f := range files {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "worker-"), ".bin"))
		if err == nil && !s.retired[n] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		for i := 1; i <= s.o.Workers; i++ {
			out = append(out, i)
		}
	}
	return out
}

// allWorkers are every worker the cluster started, retired or not.
func (s *Soak) allWorkers() []int {
	s.workersMu.Lock()
	retired := s.retired
	s.retired = map[int]bool{}
	s.workersMu.Unlock()
	out := s.liveWorkers()
	s.workersMu.Lock()
	s.retired = retired
	s.workersMu.Unlock()
	return out
}

// runningWorkers are the live workers whose process runs now.
func (s *Soak) runningWorkers() []int {
	var out []int
	for _, i := range s.liveWorkers() {
		if s.workerRSS(i) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// buildOf is the build id of tether-worker bin.
func buildOf(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	m := regexp.MustCompile(`\(build id ([^,)]+)[,)]`).FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s --version names no build id: %s", bin, out)
	}
	return string(m[1]), nil
}

// upgrade runs scripts/cluster.sh upgrade to Options.Upgrade.Bin.
func (s *Soak) upgrade(ctx context.Context) (*Upgraded, error) {
	defer close(s.upgradeDone)
	u := &Upgraded{Moves: map[string]time.Duration{}}
	to, err := buildOf(ctx, s.o.Upgrade.Bin)
	if err != nil {
		return nil, err
	}
	u.To = to
	var old []int
	for _, i := range s.runningWorkers() {
		bin, _ := os.ReadFile(filepath.Join(s.o.ClusterDir, "run", fmt.Sprintf("worker-%d.bin", i)))
		b, err := buildOf(ctx, strings.TrimSpace(string(bin)))
		if err != nil {
			return nil, err
		}
		if b != to {
			old = append(old, i)
			u.From = b
		}
	}
	if len(old) == 0 {
		u.Skipped = "every worker already runs build " + to
		return u, nil
	}
	s.retire(old)
	began := time.Now()
	out, err := s.clusterOut(ctx, "upgrade", "--bin", s.o.Upgrade.Bin, "--workers", strconv.Itoa(len(old)),
		"--ramp", "25", "--ramp-for", s.o.Upgrade.RampFor.String(), "--drain-timeout", "15m")
	u.Took, u.Output = time.Since(began), out
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "time=") {
			s.logf("upgrade | %s", line)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^(\S+): moved to build \S+ in (\S+)$`).FindAllStringSubmatch(out, -1) {
		if d, err := time.ParseDuration(m[2]); err == nil {
			u.Moves[m[1]] = d
		}
	}
	if q, err := s.c.DescribeTaskQueue(ctx, runapi.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW); err == nil && q.GetVersioningInfo().GetCurrentDeploymentVersion().GetBuildId() == to {
		u.CurrentAt = q.GetVersioningInfo().GetUpdateTime().AsTime()
	}
	// From the new build becoming current to the old one being called
	// drained, both as the server recorded them.
	if v, err := s.c.WorkerDeploymentClient().GetHandle(runapi.DefaultDeployment).DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: u.From}); err == nil &&
		v.Info.DrainageInfo != nil && !u.CurrentAt.IsZero() {
		u.Drained = v.Info.DrainageInfo.LastChangedTime.Sub(u.CurrentAt).Round(100 * time.Millisecond)
	}
	if err != nil {
		// The old workers were not stopped: they serve on.
		s.workersMu.Lock()
		for _, i := range old {
			delete(s.retired, i)
		}
		s.workersMu.Unlock()
		return u, fmt.Errorf("the upgrade failed: %w", err)
	}
	s.logf("upgrade: %s -> %s in %s; %d runs moved when asked; the old build drained %s after the new one was current", u.From, u.To, u.Took.Round(time.Second), len(u.Moves), u.Drained)
	return u, nil
}

// ensureCurrent makes the build the workers run the deployment's current
// one, when it is not: a binary rebuilt since the cluster started (make
// soak builds it) is another build, which the workers the soak restarted
// run, and which would not take over from the old one until its pollers
// have been gone 90 s.
func (s *Soak) ensureCurrent(ctx context.Context) error {
	up := s.runningWorkers()
	if len(up) == 0 {
		return nil
	}
	bin, err := os.ReadFile(filepath.Join(s.o.ClusterDir, "run", fmt.Sprintf("worker-%d.bin", up[0])))
	if err != nil {
		return err
	}
	build, err := buildOf(ctx, strings.TrimSpace(string(bin)))
	if err != nil {
		return err
	}
	q, err := s.c.DescribeTaskQueue(ctx, runapi.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err == nil && q.GetVersioningInfo().GetCurrentDeploymentVersion().GetBuildId() == build {
		return nil
	}
	s.logf("the workers run build %s, which is not current: making it current", build)
	_, err = s.c.WorkerDeploymentClient().GetHandle(runapi.DefaultDeployment).SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{
		BuildID: build, AllowNoPollers: true, IgnoreMissingTaskQueues: true,
	})
	return err
}

// clusterOut is cluster with its output (stdout and stderr).
func (s *Soak) clusterOut(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(s.o.Root, "scripts", "cluster.sh")}, args...)...)
	cmd.Env = append(append(os.Environ(), "TETHER_CLUSTER_DIR="+s.o.ClusterDir), s.workerEnv()...)
	// Its own process group, ended whole when ctx ends: the tether
	// commands it waits on go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// execution is what the soak reads of one execution of a run.
type execution struct {
	// builds are the builds that completed its workflow tasks, in order.
	builds []string
	// moved is the move its input asked for (its prologue pinned it).
	moved bool
	// waiting says the execution before it left while it waited.
	waiting bool
	// ndes are its workflow tasks that failed as non-deterministic.
	ndes []string
	// probes counts the new build's probe activities.
	probes int
	// visits are its Visit activities by node and visit: the retry note
	// of the one that completed, and whether an attempt was lost.
	visits map[string]visitRecord
	// closed is when it closed (zero: open).
	closed time.Time
}

type visitRecord struct {
	note        string
	interrupted bool
}

// executions reads every execution of run id, oldest first.
func (s *Soak) executions(ctx context.Context, id string) ([]execution, error) {
	resp, err := s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q", id)})
	if err != nil {
		return nil, err
	}
	var runs []string
	for _, e := range resp.GetExecutions() {
		runs = append([]string{e.GetExecution().GetRunId()}, runs...)
	}
	var out []execution
	for _, run := range runs {
		x, err := s.readExecution(ctx, id, run)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func (s *Soak) readExecution(ctx context.Context, id, run string) (execution, error) {
	x := execution{visits: map[string]visitRecord{}}
	scheduled := map[int64]string{} // event id -> node/visit
	lost, seen := map[string]bool{}, map[string]bool{}
	iter := s.c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			return x, err
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			var in runapi.GraphRunInput
			if decodeFirst(e.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads(), &in) == nil && in.Move != nil {
				x.moved = true
				x.waiting = in.Checkpoint != nil && in.Checkpoint.Pause != nil
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
			x.closed = e.GetEventTime().AsTime()
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			x.builds = append(x.builds, e.GetWorkflowTaskCompletedEventAttributes().GetDeploymentVersion().GetBuildId())
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			a := e.GetWorkflowTaskFailedEventAttributes()
			if a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR || strings.Contains(strings.ToLower(a.GetFailure().GetMessage()), "nondetermin") {
				x.ndes = append(x.ndes, a.GetFailure().GetMessage())
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			if eventSummary(e) == upgradeprobe.Summary {
				x.probes++
			}
			if a.GetActivityType().GetName() != "Visit" {
				continue
			}
			var req struct {
				NodeID string `json:"node_id"`
				Visit  int    `json:"visit"`
			}
			if decodeFirst(a.GetInput().GetPayloads(), &req) == nil {
				key := fmt.Sprintf("%s/%d", req.NodeID, req.Visit)
				if seen[key] {
					lost[key] = true // the run started the visit again
				}
				seen[key] = true
				scheduled[e.GetEventId()] = key
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := e.GetActivityTaskStartedEventAttributes()
			if key, ok := scheduled[a.GetScheduledEventId()]; ok && a.GetAttempt() > 1 {
				lost[key] = true // the server started it again
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := e.GetActivityTaskCompletedEventAttributes()
			key, ok := scheduled[a.GetScheduledEventId()]
			if !ok {
				continue
			}
			var res struct {
				Output map[string]any `json:"output"`
			}
			_ = decodeFirst(a.GetResult().GetPayloads(), &res)
			note, _ := res.Output[agent.RetryNoteKey].(string)
			x.visits[key] = visitRecord{note: note, interrupted: lost[key]}
		}
	}
	return x, nil
}

// decodeFirst decodes the first of payloads, JSON as the SDK writes it.
func decodeFirst(payloads []*commonpb.Payload, into any) error {
	if len(payloads) == 0 {
		return fmt.Errorf("no payload")
	}
	return json.Unmarshal(payloads[0].GetData(), into)
}

// eventSummary is an event's summary, as the Web UI shows it.
func eventSummary(e *historypb.HistoryEvent) string {
	p := e.GetUserMetadata().GetSummary()
	if p == nil {
		return ""
	}
	var s string
	if json.Unmarshal(p.GetData(), &s) != nil {
		if b, err := base64.StdEncoding.DecodeString(string(p.GetData())); err == nil {
			return string(b)
		}
	}
	return s
}

// routingRead bounds how long after a change of the current build the
// workers have read it (workerhost.DefaultRoutingEvery, twice).
const routingRead = 10 * time.Second

// checkUpgrade reads every execution of every run after an upgrade, and
// says what is wrong: a workflow task that failed as non-deterministic, a
// run whose last execution did not run on the new build, an execution
// that ran on two builds but for a move's prologue.
func (s *Soak) checkUpgrade(ctx context.Context, runs []*run, u *Upgraded) []string {
	var out []string
	for _, r := range runs {
		bad := func(format string, args ...any) {
			out = append(out, fmt.Sprintf("run %s (%s): ", r.id, r.kind)+fmt.Sprintf(format, args...))
		}
		xs := r.execs
		if len(xs) == 0 {
			bad("no executions read back")
			continue
		}
		u.Executions += len(xs)
		for i, x := range xs {
			for _, m := range x.ndes {
				bad("execution %d: a workflow task failed as non-deterministic: %s", i+1, m)
			}
			u.Probes += x.probes
			if x.moved {
				if x.waiting {
					u.MovedWaiting++
				} else {
					u.MovedBetween++
				}
			}
			// One build per execution, but for the first tasks of one a
			// move started (the old build pinned it, then waited).
			rest := x.builds
			if x.moved {
				for len(rest) > 0 && rest[0] != u.To {
					rest = rest[1:]
				}
			}
			for _, b := range rest {
				if b != rest[0] {
					bad("execution %d ran on builds %v", i+1, x.builds)
					break
				}
			}
			if x.probes > 0 && (len(rest) == 0 || rest[0] != u.To) {
				bad("execution %d ran the new build's activity on build %v", i+1, x.builds)
			}
		}
		// A run that ended before the new build was current (and its
		// workers had read so) ended where it was.
		last := xs[len(xs)-1]
		if last.closed.IsZero() || u.CurrentAt.IsZero() || last.closed.After(u.CurrentAt.Add(routingRead)) {
			if len(last.builds) == 0 || last.builds[len(last.builds)-1] != u.To {
				bad("it ended at %s, after build %s became current at %s, on builds %v", last.closed.Format(time.TimeOnly), u.To, u.CurrentAt.Format(time.TimeOnly), last.builds)
			}
		}
	}
	if u.MovedWaiting == 0 {
		out = append(out, "no run moved while it waited for a person: start the upgrade while runs wait (-upgrade-at)")
	}
	if u.MovedBetween == 0 {
		out = append(out, "no run moved between two visits: start the upgrade while runs visit (-upgrade-at)")
	}
	if u.Probes == 0 {
		out = append(out, "no run ran the new build's activity: the upgrade proved nothing")
	}
	return out
}

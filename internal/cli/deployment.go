package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/tether-run/tether/internal/health"
	"github.com/tether-run/tether/internal/runapi"
)

// Build is one build of Tether's worker deployment, as `tether workers`
// shows it.
type Build struct {
	// ID is the build id; "" for the unversioned workers and runs.
	ID string `json:"build_id"`
	// Routing is "current", "ramping N%", or "" (not routed to: its runs
	// move to the current build at their next safe point).
	Routing string `json:"routing,omitempty"`
	// Workers are the identities of the workers of the build polling now.
	Workers []string `json:"workers"`
	// OpenRuns are the open GraphRun executions pinned to the build, and
	// Waiting those of them that wait for a person; -1: unknown.
	OpenRuns int64 `json:"open_runs"`
	Waiting  int64 `json:"waiting"`
	// Drainage is Temporal's: "draining", "drained" or "" (current,
	// ramping, or never routed to).
	Drainage        string    `json:"drainage,omitempty"`
	DrainageChecked time.Time `json:"drainage_checked,omitzero"`
	Created         time.Time `json:"created,omitzero"`
}

// Deployment is Tether's worker deployment: its routing and its builds.
type Deployment struct {
	Name    string  `json:"deployment"`
	Current string  `json:"current,omitempty"`
	Ramping string  `json:"ramping,omitempty"`
	Builds  []Build `json:"builds"`
}

// deployment reads the deployment TETHER_DEPLOYMENT names: Temporal's
// description of it, the task queue's pollers, and a count of the runs
// pinned to each build.
func (a *app) deployment(ctx context.Context) (*Deployment, error) {
	c, err := a.temporal()
	if err != nil {
		return nil, err
	}
	name := a.cfg.Versioning.Deployment
	out := &Deployment{Name: name}
	desc, err := c.WorkerDeploymentClient().GetHandle(name).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
	case err != nil:
		return nil, fmt.Errorf("describe worker deployment %s: %w", name, err)
	default:
		rc := desc.Info.RoutingConfig
		if rc.CurrentVersion != nil {
			out.Current = rc.CurrentVersion.BuildID
		}
		if rc.RampingVersion != nil && rc.RampingVersionPercentage > 0 {
			out.Ramping = rc.RampingVersion.BuildID
		}
		for _, v := range desc.Info.VersionSummaries {
			b := Build{ID: v.Version.BuildID, Created: v.CreateTime, OpenRuns: -1, Waiting: -1}
			switch {
			case b.ID == out.Current:
				b.Routing = "current"
			case b.ID == out.Ramping:
				b.Routing = fmt.Sprintf("ramping %g%%", rc.RampingVersionPercentage)
			default:
				switch v.DrainageStatus {
				case client.WorkerDeploymentVersionDrainageStatusDraining:
					b.Drainage = "draining"
				case client.WorkerDeploymentVersionDrainageStatusDrained:
					b.Drainage = "drained"
				}
			}
			out.Builds = append(out.Builds, b)
		}
	}
	workers, err := a.pollersByBuild(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(workers[""]) > 0 {
		out.Builds = append(out.Builds, Build{OpenRuns: -1, Waiting: -1})
	}
	for i := range out.Builds {
		b := &out.Builds[i]
		b.Workers = workers[b.ID]
		if b.ID == "" {
			continue
		}
		if b.Drainage != "" {
			if v, err := c.WorkerDeploymentClient().GetHandle(name).DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: b.ID}); err == nil && v.Info.DrainageInfo != nil {
				b.DrainageChecked = v.Info.DrainageInfo.LastCheckedTime
			}
		}
		b.OpenRuns = a.count(ctx, runapi.PinnedQuery(name, b.ID))
		b.Waiting = a.count(ctx, runapi.PinnedQuery(name, b.ID)+` AND TetherStatus = "waiting"`)
	}
	// The current build first, then the ramping one, then the newest.
	slices.SortStableFunc(out.Builds, func(x, y Build) int {
		rank := func(b Build) int {
			switch {
			case b.Routing == "current":
				return 0
			case b.Routing != "":
				return 1
			case b.ID == "":
				return 3
			}
			return 2
		}
		if r := rank(x) - rank(y); r != 0 {
			return r
		}
		return y.Created.Compare(x.Created)
	})
	return out, nil
}

// count is the number of executions query matches, -1 when Temporal did
// not say (a search attribute not registered, visibility down).
func (a *app) count(ctx context.Context, query string) int64 {
	c, err := a.temporal()
	if err != nil {
		return -1
	}
	resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		return -1
	}
	return resp.GetCount()
}

// pollersByBuild are the workers polling Tether's task queue now, by the
// build of deployment they poll as ("" for unversioned workers).
func (a *app) pollersByBuild(ctx context.Context, deployment string) (map[string][]string, error) {
	c, err := a.temporal()
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		d, err := c.DescribeTaskQueue(qctx, runapi.TaskQueue, typ)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("describe task queue %s: %w", runapi.TaskQueue, err)
		}
		for _, p := range d.GetPollers() {
			if t := p.GetLastAccessTime(); t == nil || time.Since(t.AsTime()) >= health.LongPoll {
				continue
			}
			build := ""
			if o := p.GetDeploymentOptions(); o.GetWorkerVersioningMode() == enumspb.WORKER_VERSIONING_MODE_VERSIONED {
				if o.GetDeploymentName() != deployment {
					continue
				}
				build = o.GetBuildId()
			}
			if !slices.Contains(out[build], p.GetIdentity()) {
				out[build] = append(out[build], p.GetIdentity())
			}
		}
	}
	for b := range out {
		slices.Sort(out[b])
	}
	return out, nil
}

func (a *app) workersCmd() *cobra.Command {
	var asJSON bool
	var drained string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "Show each build of the worker deployment: its routing, workers, open runs and drainage",
		Long: `Show Tether's Temporal worker deployment (TETHER_DEPLOYMENT, default
"tether"): which build new runs go to (current, and ramping), and for each
build the workers polling as it, the open runs pinned to it (and how many of
them wait for a person), and whether Temporal calls it drained. A build that
is neither current nor ramping has runs still on it until they end or move
to the current build at their next safe point (tether upgrade-runs moves the
waiting ones); once it is drained its workers can stop.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if drained != "" {
				return a.waitDrained(cmd.Context(), drained, timeout)
			}
			d, err := a.deployment(cmd.Context())
			if err != nil {
				return failedErr(err)
			}
			if asJSON {
				enc := json.NewEncoder(a.out)
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			}
			a.printDeployment(d)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the deployment as JSON")
	cmd.Flags().StringVar(&drained, "wait-drained", "", "wait until Temporal calls build BUILD drained (no open run pinned to it), saying what is left as it goes")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "with --wait-drained: give up after this long (exit 1)")
	return cmd
}

// waitDrained waits until Temporal calls build drained, for at most
// timeout, and says how long it took.
func (a *app) waitDrained(ctx context.Context, build string, timeout time.Duration) error {
	began := time.Now()
	last := ""
	var asked, missing time.Time
	for {
		d, err := a.deployment(ctx)
		if err != nil {
			// A busy server: try again, within the timeout.
			if time.Since(began) > timeout {
				return failedErr(err)
			}
			fmt.Fprintf(a.errOut, "could not read the deployment (trying again): %v\n", err)
			time.Sleep(2 * time.Second)
			continue
		}
		var b *Build
		for i := range d.Builds {
			if d.Builds[i].ID == build {
				b = &d.Builds[i]
			}
		}
		if b != nil {
			missing = time.Time{}
		}
		switch {
		case b == nil && missing.IsZero():
			// A busy server's deployment workflow now and then answers
			// "not found": look again before believing it.
			missing = time.Now()
		case b == nil && time.Since(missing) > missingFor:
			return failedErr(fmt.Errorf("deployment %s has no build %s (tether workers lists its builds)", d.Name, build))
		case b == nil:
		case b.Routing != "":
			return failedErr(fmt.Errorf("build %s is %s: new runs still go to it, so it does not drain; make another build current first", build, b.Routing))
		case b.Drainage == "drained":
			fmt.Fprintf(a.out, "build %s drained after %s\n", build, time.Since(began).Round(100*time.Millisecond))
			return nil
		case b.Drainage == "" && b.OpenRuns == 0 && time.Since(began) > missingFor:
			// Never current nor ramping, Temporal keeps no drainage for
			// it; no run is pinned to it.
			fmt.Fprintf(a.out, "build %s has no open run (it was never routed to, so Temporal keeps no drainage of it)\n", build)
			return nil
		}
		if b == nil {
			time.Sleep(2 * time.Second)
			continue
		}
		// A run that began to wait just as the routing changed may have
		// been missed by tether upgrade-runs: ask the waiting ones again.
		if b.Waiting > 0 && time.Since(asked) > askAgain {
			asked = time.Now()
			if err := a.askToMove(ctx, d, build, true); err != nil {
				fmt.Fprintf(a.errOut, "could not ask the waiting runs of build %s to move: %v\n", build, err)
			}
		}
		if now := fmt.Sprintf("%d open runs (%d waiting for a person), %d workers", b.OpenRuns, b.Waiting, len(b.Workers)); now != last {
			fmt.Fprintf(a.out, "build %s: %s; %s\n", build, now, orDash(b.Drainage, "not checked yet"))
			last = now
		}
		if time.Since(began) > timeout {
			return failedErr(fmt.Errorf("build %s is not drained after %s: %s (tether upgrade-runs moves the waiting runs; a run in a visit moves when the visit ends)", build, timeout, last))
		}
		select {
		case <-ctx.Done():
			return failedErr(ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// askAgain is how often tether workers --wait-drained asks the waiting
// runs of the build it waits on to move; missingFor is how long the
// deployment may not list the build before it believes that.
const (
	askAgain   = 10 * time.Second
	missingFor = time.Minute
)

// askToMove signals every open run of build (only those waiting for a
// person, with waitingOnly) to check whether it should move.
func (a *app) askToMove(ctx context.Context, d *Deployment, build string, waitingOnly bool) error {
	c, err := a.temporal()
	if err != nil {
		return err
	}
	runs, err := a.pinnedRuns(ctx, d.Name, build)
	if err != nil {
		return err
	}
	ask := a.upgradeAsk(ctx, d)
	for _, r := range runs {
		if waitingOnly && r.status != "waiting" {
			continue
		}
		if err := c.SignalWorkflow(ctx, r.id, r.execution, runapi.SignalUpgrade, ask); err != nil {
			return fmt.Errorf("signal run %s: %w", r.id, err)
		}
	}
	return nil
}

// upgradeAsk is what the upgrade signal carries: the task queue's routing
// as the workers read it, so that a run whose worker has not read it yet
// waits until it has.
func (a *app) upgradeAsk(ctx context.Context, d *Deployment) runapi.Upgrade {
	ask := runapi.Upgrade{Current: d.Current}
	c, err := a.temporal()
	if err != nil {
		return ask
	}
	if q, err := c.DescribeTaskQueue(ctx, runapi.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW); err == nil && q.GetVersioningInfo().GetUpdateTime() != nil {
		ask.Since = q.GetVersioningInfo().GetUpdateTime().AsTime().UTC()
	}
	return ask
}

func orDash(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

func (a *app) printDeployment(d *Deployment) {
	routing := "no current build: new runs wait until one is set"
	if d.Current != "" {
		routing = "new runs go to build " + d.Current
		if d.Ramping != "" {
			routing += ", some to ramping build " + d.Ramping
		}
	}
	fmt.Fprintf(a.out, "deployment %s: %s\n\n", d.Name, routing)
	if len(d.Builds) == 0 {
		fmt.Fprintln(a.out, "no builds and no workers: start tether-worker")
		return
	}
	tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BUILD\tROUTING\tWORKERS\tOPEN RUNS\tWAITING\tDRAINAGE")
	num := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return fmt.Sprint(n)
	}
	for _, b := range d.Builds {
		id, routing, drainage := b.ID, b.Routing, b.Drainage
		if id == "" {
			id, routing = "(unversioned)", "-"
		}
		if routing == "" {
			routing = "-"
		}
		if drainage == "" {
			drainage = "-"
		} else if !b.DrainageChecked.IsZero() {
			drainage += fmt.Sprintf(" (checked %s ago)", time.Since(b.DrainageChecked).Round(time.Second))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", id, routing, len(b.Workers), num(b.OpenRuns), num(b.Waiting), drainage)
	}
	_ = tw.Flush()
	for _, b := range d.Builds {
		if len(b.Workers) == 0 {
			continue
		}
		id := b.ID
		if id == "" {
			id = "(unversioned)"
		}
		fmt.Fprintf(a.out, "\n%s: %s", id, strings.Join(b.Workers, ", "))
	}
	fmt.Fprintln(a.out)
	for _, b := range d.Builds {
		if b.ID != "" && b.Routing == "" && b.OpenRuns > 0 && len(b.Workers) == 0 {
			fmt.Fprintf(a.out, "\n! build %s has %d open runs and no worker: they wait until a worker of build %s starts, which moves them to build %s (or tether upgrade-runs --replay-stranded has build %s replay them)\n", b.ID, b.OpenRuns, b.ID, d.Current, d.Current)
		}
	}
}

func (a *app) upgradeRunsCmd() *cobra.Command {
	var wait time.Duration
	var dryRun, stranded bool
	var replay string
	cmd := &cobra.Command{
		Use:   "upgrade-runs",
		Short: "Move the runs of builds no longer routed to onto the current build, at their safe points",
		Long: `Every run is pinned to the build of Tether it started on. When the worker
deployment's current build changes, a run moves to it by itself between two
visits; a run waiting for a person has nothing that wakes it, so this
command asks every open run of a build that is neither current nor ramping
to check (the "upgrade" signal). A waiting run then continues as new on the
current build, its question and everything else carried in its checkpoint;
a run in the middle of a visit moves once the visit is done. Run it after
every change of the current build (scripts/cluster.sh upgrade does).
With --wait it waits until each run it asked has moved or ended, and says
how long each took.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if stranded || replay != "" {
				return a.replayStranded(cmd.Context(), replay, dryRun)
			}
			return a.upgradeRuns(cmd.Context(), wait, dryRun)
		},
	}
	cmd.Flags().BoolVar(&stranded, "replay-stranded", false, "instead: pin the open runs of builds no worker polls to the current build, which replays their histories (every release of Tether replays every older one's; a build that does not fails the run's workflow task)")
	cmd.Flags().StringVar(&replay, "replay", "", "as --replay-stranded, for the runs of build BUILD, whatever Temporal says of its workers (whose pollers it lists for a minute and a half after they are gone)")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait this long for the runs to move (0: do not wait)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the runs it would ask, and ask none")
	return cmd
}

// pinnedRun is an open run pinned to a build the deployment no longer
// routes to.
type pinnedRun struct {
	id, execution, build, status string
	// first is when it was first asked to move, asked when last.
	first, asked time.Time
}

// deploymentWithClient is the deployment, and the Temporal client of a
// command that acts on its runs.
func (a *app) deploymentWithClient(ctx context.Context) (client.Client, *Deployment, error) {
	c, err := a.temporal()
	if err != nil {
		return nil, nil, failedErr(err)
	}
	d, err := a.deployment(ctx)
	if err != nil {
		return nil, nil, failedErr(err)
	}
	return c, d, nil
}

func (a *app) upgradeRuns(ctx context.Context, wait time.Duration, dryRun bool) error {
	c, d, err := a.deploymentWithClient(ctx)
	if err != nil {
		return err
	}
	if d.Current == "" {
		return failedErr(fmt.Errorf("deployment %s has no current build: set one first (temporal worker deployment set-current-version --deployment-name %s --build-id BUILD)", d.Name, d.Name))
	}
	ask := a.upgradeAsk(ctx, d)
	var runs []*pinnedRun
	stranded := map[string]int{}
	for _, b := range d.Builds {
		if b.ID == "" || b.Routing != "" {
			continue
		}
		found, err := a.pinnedRuns(ctx, d.Name, b.ID)
		if err != nil {
			return failedErr(err)
		}
		if len(b.Workers) == 0 && len(found) > 0 {
			// Nothing runs their code: they cannot move (below).
			stranded[b.ID] = len(found)
			continue
		}
		runs = append(runs, found...)
	}
	if len(runs) == 0 && len(stranded) == 0 {
		fmt.Fprintf(a.out, "every open run is on build %s%s\n", d.Current, rampingNote(d))
		return nil
	}
	for _, r := range runs {
		what := "moves once its visit is done"
		if r.status == "waiting" {
			what = "waits for a person: moves now"
		}
		if dryRun {
			fmt.Fprintf(a.out, "%s: on build %s, %s (not asked: --dry-run)\n", r.id, r.build, what)
			continue
		}
		if err := c.SignalWorkflow(ctx, r.id, r.execution, runapi.SignalUpgrade, ask); err != nil {
			var gone *serviceerror.NotFound
			if errors.As(err, &gone) {
				// It ended (or moved by itself) since it was listed.
				fmt.Fprintf(a.out, "%s: ended or moved on build %s before it was asked\n", r.id, r.build)
				continue
			}
			fmt.Fprintf(a.errOut, "%s: could not ask it to move: %v\n", r.id, err)
			continue
		}
		r.asked = time.Now()
		r.first = r.asked
		fmt.Fprintf(a.out, "%s: on build %s, %s\n", r.id, r.build, what)
	}
	for build, n := range stranded {
		fmt.Fprintf(a.errOut, "! %d runs of build %s wait for a worker of that build: none polls, so none can move them; start one (it moves them to build %s at once), or have build %s replay them (tether upgrade-runs --replay-stranded)\n", n, build, d.Current, d.Current)
	}
	if dryRun || wait <= 0 {
		return nil
	}
	return a.awaitMoves(ctx, runs, d.Current, wait, ask)
}

// replayStranded pins every open run of a build that is neither current
// nor ramping and that no worker polls to the current build: nothing can
// run such a run's code any more (its workers were replaced without a
// rollout), so the current build takes its next task and replays its
// history. The upgrade signal that follows gives it that task at once.
func (a *app) replayStranded(ctx context.Context, only string, dryRun bool) error {
	c, d, err := a.deploymentWithClient(ctx)
	if err != nil {
		return err
	}
	if d.Current == "" {
		return failedErr(fmt.Errorf("deployment %s has no current build to replay stranded runs on", d.Name))
	}
	n := 0
	for _, b := range d.Builds {
		if b.ID == "" || b.Routing != "" || (only == "" && len(b.Workers) > 0) || (only != "" && b.ID != only) {
			continue
		}
		runs, err := a.pinnedRuns(ctx, d.Name, b.ID)
		if err != nil {
			return failedErr(err)
		}
		for _, r := range runs {
			n++
			if dryRun {
				fmt.Fprintf(a.out, "%s: on build %s, which no worker polls (not pinned: --dry-run)\n", r.id, b.ID)
				continue
			}
			_, err := c.UpdateWorkflowExecutionOptions(ctx, client.UpdateWorkflowExecutionOptionsRequest{
				WorkflowId: r.id, RunId: r.execution,
				WorkflowExecutionOptionsChanges: client.WorkflowExecutionOptionsChanges{VersioningOverride: &client.VersioningOverrideChange{
					Value: &client.PinnedVersioningOverride{Version: worker.WorkerDeploymentVersion{DeploymentName: d.Name, BuildID: d.Current}},
				}},
			})
			if err != nil {
				return failedErr(fmt.Errorf("pin run %s to build %s: %w", r.id, d.Current, err))
			}
			_ = c.SignalWorkflow(ctx, r.id, r.execution, runapi.SignalUpgrade, a.upgradeAsk(ctx, d))
			fmt.Fprintf(a.out, "%s: was on build %s; pinned to build %s, which replays it now\n", r.id, b.ID, d.Current)
		}
	}
	if n == 0 {
		fmt.Fprintln(a.out, "no open run is on a build without workers")
	}
	return nil
}

// rampingNote says which build ramps, if one does.
func rampingNote(d *Deployment) string {
	if d.Ramping == "" {
		return ""
	}
	return " or the ramping build " + d.Ramping
}

// pinnedRuns lists the open runs pinned to build.
func (a *app) pinnedRuns(ctx context.Context, deployment, build string) ([]*pinnedRun, error) {
	c, err := a.temporal()
	if err != nil {
		return nil, err
	}
	var out []*pinnedRun
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: runapi.PinnedQuery(deployment, build), NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the runs of build %s: %w", build, err)
		}
		for _, e := range resp.GetExecutions() {
			r := &pinnedRun{id: e.GetExecution().GetWorkflowId(), execution: e.GetExecution().GetRunId(), build: build}
			if f := e.GetSearchAttributes().GetIndexedFields()[runapi.SearchStatus.GetName()]; f != nil {
				_ = json.Unmarshal(f.GetData(), &r.status)
			}
			out = append(out, r)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

// awaitMoves waits until every run in runs has an execution pinned to
// current, or has closed, for at most wait. It asks a run that has not
// moved again every askAgain: a run asked during a visit checks the
// routing its worker knows when the visit ends, which can lag the switch
// by a few seconds, and once it then waits for a person nothing else
// wakes it.
func (a *app) awaitMoves(ctx context.Context, runs []*pinnedRun, current string, wait time.Duration, ask runapi.Upgrade) error {
	c, err := a.temporal()
	if err != nil {
		return failedErr(err)
	}
	deadline := time.Now().Add(wait)
	left := slices.Clone(runs)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		left = slices.DeleteFunc(left, func(r *pinnedRun) bool {
			if r.asked.IsZero() {
				return true
			}
			d, err := c.DescribeWorkflow(ctx, r.id, "")
			if err != nil {
				return false
			}
			info := d.RawResponse.GetWorkflowExecutionInfo()
			if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				fmt.Fprintf(a.out, "%s: ended (%s) before it moved\n", r.id, strings.ToLower(strings.TrimPrefix(info.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")))
				return true
			}
			vi := info.GetVersioningInfo()
			on := vi.GetDeploymentVersion().GetBuildId()
			if o := vi.GetVersioningOverride().GetPinned(); o != nil {
				on = o.GetVersion().GetBuildId()
			}
			// (The execution listed may be the one a move started, on its
			// way to the current build.)
			if on == current {
				fmt.Fprintf(a.out, "%s: moved to build %s in %s\n", r.id, current, time.Since(r.first).Round(100*time.Millisecond))
				return true
			}
			if time.Since(r.asked) >= askAgain {
				if err := c.SignalWorkflow(ctx, r.id, "", runapi.SignalUpgrade, ask); err == nil {
					r.asked = time.Now()
				}
			}
			return false
		})
	}
	if len(left) > 0 {
		var ids []string
		for _, r := range left {
			ids = append(ids, r.id)
		}
		return failedErr(fmt.Errorf("%d runs did not move within %s: %s (a run in a long visit moves when it ends; tether workers shows what is left)", len(left), wait, strings.Join(ids, ", ")))
	}
	fmt.Fprintf(a.out, "every run asked is on build %s or ended\n", current)
	return nil
}

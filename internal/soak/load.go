package soak

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// Result is what the soak did and found.
type Result struct {
	Runs     int
	Visits   int
	Elapsed  time.Duration
	Faults   []string
	RSS      []RSSSample
	Problems []string
	// Leftovers counts what the workers' roots still hold of the soak's
	// runs after every run was deleted, per worker.
	Leftovers map[string]int
	// StoreObjects counts the bucket's objects before the soak and after
	// every soak run was deleted.
	StoreObjectsBefore, StoreObjectsAfter int
	// Notices is what the notice receiver got (Options.Notify).
	Notices *Notices
	// Upgraded is what the rolling upgrade did (Options.Upgrade).
	Upgraded *Upgraded
}

// RSSSample is the workers' resident memory at one moment.
type RSSSample struct {
	At    time.Duration
	PerWk map[string]int64 // bytes
}

// Load runs the soak: every run at once, with the faults, then the checks.
func (s *Soak) Load(ctx context.Context) (*Result, error) {
	res := &Result{Leftovers: map[string]int{}}
	before, err := s.blobs.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list the bucket: %w", err)
	}
	res.StoreObjectsBefore = len(before)
	if s.o.Notify {
		if err := s.startNotices(ctx); err != nil {
			return nil, err
		}
		defer func() {
			if err := s.stopNotices(context.WithoutCancel(ctx)); err != nil {
				s.logf("restarting the workers without the notice receiver: %v", err)
			}
		}()
	}

	if s.o.CLIRuns > 0 {
		if err := s.startModel(ctx); err != nil {
			return nil, err
		}
		defer func() {
			if err := s.stopModel(context.WithoutCancel(ctx)); err != nil {
				s.logf("restarting the workers without the fake model: %v", err)
			}
		}()
	}
	if s.o.Upgrade.Bin == "" {
		close(s.upgradeDone)
	}
	if err := s.ensureCurrent(ctx); err != nil {
		return nil, fmt.Errorf("make the workers' build current: %w", err)
	}

	runs, err := s.startMix(ctx)
	if err != nil {
		return nil, err
	}
	res.Runs = len(runs)
	started := time.Now()
	s.logf("started %d runs (%s)", len(runs), mixOf(runs))

	loadCtx, stopLoad := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Add(3)
	go func() { defer bg.Done(); s.answer(loadCtx, runs) }()
	var faultMu sync.Mutex
	var upgradeErr error
	if s.o.Upgrade.Bin != "" {
		bg.Add(1)
		go func() {
			defer bg.Done()
			select {
			case <-loadCtx.Done():
				close(s.upgradeDone)
				return
			case <-time.After(time.Until(started.Add(s.o.Upgrade.At))):
			}
			s.logf("fault: rolling upgrade to %s", s.o.Upgrade.Bin)
			u, err := s.upgrade(ctx)
			faultMu.Lock()
			defer faultMu.Unlock()
			res.Upgraded, upgradeErr = u, err
			switch {
			case err != nil:
				res.Faults = append(res.Faults, "FAILED upgrade: "+err.Error())
			case u.Skipped != "":
				res.Faults = append(res.Faults, "no upgrade: "+u.Skipped)
			default:
				res.Faults = append(res.Faults, fmt.Sprintf("%s rolling upgrade from build %s to %s (%s, every old worker stopped after the drain)", s.o.Upgrade.At, u.From, u.To, u.Took.Round(time.Second)))
			}
		}()
	}
	go func() {
		defer bg.Done()
		s.inject(loadCtx, started, func(f string) {
			faultMu.Lock()
			res.Faults = append(res.Faults, f)
			faultMu.Unlock()
		})
	}()
	go func() { defer bg.Done(); res.RSS = s.sampleRSS(loadCtx, started) }()

	s.wait(ctx, runs)
	res.Elapsed = time.Since(started)
	stopLoad()
	bg.Wait()
	// A fault may have been left half done (S3 stopped): undo it before
	// checking anything, even past the deadline.
	hctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := s.heal(hctx); err != nil {
		return res, err
	}
	s.logf("every run ended after %s", res.Elapsed.Round(time.Second))
	res.Problems = append(res.Problems, s.missedFaults(res.Faults)...)
	if s.o.Upgrade.Bin != "" && res.Upgraded == nil && upgradeErr == nil {
		res.Problems = append(res.Problems, "the rolling upgrade did not happen while the runs went on: start it earlier (-upgrade-at)")
	}
	if upgradeErr != nil {
		res.Problems = append(res.Problems, fmt.Sprintf("the rolling upgrade failed: %v\n%s", upgradeErr, res.Upgraded.output()))
	}
	for _, r := range runs {
		if r.execs, err = s.executions(hctx, r.id); err != nil {
			res.Problems = append(res.Problems, fmt.Sprintf("run %s: read its executions: %v", r.id, err))
		}
		res.Problems = append(res.Problems, s.check(hctx, r)...)
		if r.result != nil {
			res.Visits += r.result.Visits
		}
	}
	if u := res.Upgraded; u != nil && u.Skipped == "" && upgradeErr == nil {
		res.Problems = append(res.Problems, s.checkUpgrade(hctx, runs, u)...)
		s.logf("upgrade: %d executions read back; %d runs moved while waiting, %d between visits; the new build ran its new activity %d times", u.Executions, u.MovedWaiting, u.MovedBetween, u.Probes)
	}
	if s.o.Notify {
		// A notice is sent by a workflow of its own, which may still be
		// retrying when its run ends (a receiver or server was down).
		res.Notices = s.countNotices(hctx, runs, 3*time.Minute)
		res.Problems = append(res.Problems, res.Notices.problems()...)
		s.logf("notices: %d questions asked, %d notified once; %d requests", res.Notices.Questions, res.Notices.Notified, res.Notices.Requests)
	}
	res.Problems = append(res.Problems, s.deleteAll(hctx, runs, res)...)
	return res, nil
}

// startMix starts the soak's runs: persist loops with a human answer, tool
// runs in workspaces of many files, and fan-outs.
func (s *Soak) startMix(ctx context.Context) ([]*run, error) {
	persist := graphFile("soak-persist", graphData{Rounds: s.o.Rounds, AskAt: s.o.Rounds / 2})
	// Half the persist loops are longer (LateRounds) and ask late: under an
	// upgrade they are in the middle of their visits when the new build
	// becomes current, and move between two of them; the others wait for
	// a person across it. Likewise the second half of the CLI runs.
	lateRounds := s.o.LateRounds
	if lateRounds <= 0 {
		lateRounds = 2 * s.o.Rounds
	}
	late := graphFile("soak-persist", graphData{Rounds: lateRounds, AskAt: lateRounds - 2})
	lateCLI := graphFile("soak-cli", graphData{Rounds: 2 * cliRounds, AskAt: 2*cliRounds - 1, Backend: cliBackend})
	tool := graphFile("soak-tool", graphData{Rounds: s.o.Rounds})
	fanout := graphFile("soak-fanout", graphData{Rounds: max(1, s.o.Rounds/4)})
	cli := graphFile("soak-cli", graphData{Rounds: cliRounds, AskAt: cliRounds / 2, Backend: cliBackend})
	nPersist := s.o.Runs * 3 / 5
	nTool := s.o.Runs * 3 / 10
	var src string
	if nTool > 0 {
		var err error
		if src, err = s.workspaceSource(); err != nil {
			return nil, err
		}
		defer os.RemoveAll(src)
	}
	runs := make([]*run, s.o.Runs+s.o.CLIRuns)
	for i := range runs {
		r := &run{id: fmt.Sprintf("%s-%d", s.prefix, i), rounds: s.o.Rounds}
		runs[i] = r
		var g *graph.Graph
		var ws *runstore.WorkspaceState
		switch {
		case i >= s.o.Runs && (i-s.o.Runs)%2 == 1:
			r.kind, g, r.rounds = "cli", lateCLI, 2*cliRounds
		case i >= s.o.Runs:
			r.kind, g, r.rounds = "cli", cli, cliRounds
		case i < nPersist && i%2 == 1:
			r.kind, g, r.rounds = "persist", late, lateRounds
		case i < nPersist:
			r.kind, g = "persist", persist
		case i < nPersist+nTool:
			r.kind, g, r.files = "tool", tool, s.o.WorkspaceFiles
			st, _, err := workspace.Import(ctx, s.blobs, r.id, workspace.Source{From: src}, s.cfg.WorkspaceLimits, time.Now())
			if err != nil {
				return nil, fmt.Errorf("import the workspace of %s: %w", r.id, err)
			}
			ws = st
		default:
			r.kind, g, r.rounds = "fanout", fanout, max(1, s.o.Rounds/4)
		}
		if err := s.start(ctx, r, g, ws); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// workspaceSource writes the tool runs' starting files: WorkspaceFiles
// small files in directories of 100.
func (s *Soak) workspaceSource() (string, error) {
	dir, err := os.MkdirTemp("", "tether-soak-src-*")
	if err != nil {
		return "", err
	}
	for i := range s.o.WorkspaceFiles {
		d := filepath.Join(dir, "src", strconv.Itoa(i/100))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("file-%d.txt", i)), []byte(sourceContent(i)), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func sourceContent(i int) string { return fmt.Sprintf("file %d of the soak's workspace\n", i) }

func mixOf(runs []*run) string {
	n := map[string]int{}
	for _, r := range runs {
		n[r.kind]++
	}
	s := fmt.Sprintf("%d persist loops with a human answer, %d tool runs in workspaces, %d fan-outs", n["persist"], n["tool"], n["fanout"])
	if n["cli"] > 0 {
		s += fmt.Sprintf(", %d persist loops of %s (a real CLI) with a human answer", n["cli"], cliBackend)
	}
	return s
}

// cliRounds is how many rounds each CLI run makes: each is a visit of
// the real CLI, seconds each.
const cliRounds = 4

// answer answers each persist run's question with the plain temporal CLI,
// as a person or a script outside Tether would, once the run waits for it.
func (s *Soak) answer(ctx context.Context, runs []*run) {
	byID := map[string]*run{}
	for _, r := range runs {
		if r.kind == "persist" || r.kind == "cli" {
			byID[r.id] = r
		}
	}
	// With an upgrade, questions wait for it: runs then wait for a person
	// across it, as a run waits over a weekend.
	select {
	case <-ctx.Done():
		return
	case <-s.upgradeDone:
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		waiting, err := s.waiting(lctx)
		cancel()
		if err != nil {
			continue // the server is restarting
		}
		for _, id := range waiting {
			r := byID[id]
			if r == nil || r.asked {
				continue
			}
			cmd := exec.CommandContext(ctx, filepath.Join(s.o.Root, "bin", "temporal"), "workflow", "signal",
				"--address", s.cfg.TemporalAddress, "--namespace", s.cfg.Namespace,
				"--workflow-id", id, "--name", runapi.SignalAnswer,
				"--input", `{"question_id": "ask-1", "text": "go on"}`)
			if err := cmd.Run(); err == nil {
				r.asked = true
			}
		}
	}
}

// waiting lists the soak's runs that wait for a person, by the search
// attribute every run keeps.
func (s *Soak) waiting(ctx context.Context) ([]string, error) {
	var out []string
	var token []byte
	for {
		resp, err := s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf(`TetherStatus = "waiting" AND WorkflowId STARTS_WITH %q`, s.prefix),
			NextPageToken: token,
		})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetExecutions() {
			out = append(out, e.GetExecution().GetWorkflowId())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

// inject breaks the cluster on the schedule of the options until ctx ends:
// worker kills on their own clock, and the one-off faults (a server
// restart, a database restart, an S3 outage of its full length) on another,
// so that a slow restart does not delay or shorten the others.
func (s *Soak) inject(ctx context.Context, started time.Time, did func(string)) {
	f := s.o.Faults
	type event struct {
		at   time.Duration
		name string
		do   func() error
	}
	var once, kills []event
	if f.RestartTemporal > 0 {
		once = append(once, event{f.RestartTemporal, "restart temporal", func() error { return s.cluster(ctx, "restart", "temporal") }})
	}
	if f.RestartPostgres > 0 {
		once = append(once, event{f.RestartPostgres, "restart postgres", func() error { return s.cluster(ctx, "restart", "postgres") }})
	}
	if f.StopS3.For > 0 {
		once = append(once, event{f.StopS3.At, fmt.Sprintf("stop s3 for %s", f.StopS3.For), func() error {
			if err := s.cluster(ctx, "stop", "s3"); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
			case <-time.After(f.StopS3.For):
			}
			// Started again even when the runs ended meanwhile.
			return s.cluster(context.WithoutCancel(ctx), "start", "s3")
		}})
	}
	slices.SortFunc(once, func(a, b event) int { return int(a.at - b.at) })
	if f.KillEvery > 0 {
		for at, n := f.KillEvery, 0; at < s.o.Deadline && (f.Kills == 0 || n < f.Kills); at, n = at+f.KillEvery, n+1 {
			kills = append(kills, event{at, "kill", func() error {
				// A worker that runs, and that no upgrade is replacing.
				up := s.runningWorkers()
				if len(up) == 0 {
					return fmt.Errorf("no worker is running to kill")
				}
				w := strconv.Itoa(up[s.rng.IntN(len(up))])
				for _, step := range []string{"kill", "wipe", "start"} {
					if err := s.cluster(context.WithoutCancel(ctx), "worker", step, w); err != nil {
						return err
					}
				}
				did(fmt.Sprintf("%s kill -9 worker %s, restarted with empty disks", time.Since(started).Round(time.Second), w))
				return nil
			}})
		}
	}
	run := func(events []event) {
		for _, e := range events {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(started.Add(e.at))):
			}
			s.logf("fault: %s", e.name)
			at := time.Since(started).Round(time.Second)
			if err := e.do(); err != nil {
				if ctx.Err() != nil {
					return // the runs ended while the fault was under way
				}
				s.logf("fault %s failed: %v", e.name, err)
				did("FAILED " + e.name + ": " + err.Error())
				continue
			}
			if e.name != "kill" {
				did(fmt.Sprintf("%s %s", at, e.name))
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); run(once) }()
	go func() { defer wg.Done(); run(kills) }()
	wg.Wait()
}

// heal starts whatever a fault left stopped.
func (s *Soak) heal(ctx context.Context) error {
	for _, part := range []string{"s3", "postgres", "temporal"} {
		if err := s.cluster(ctx, "start", part); err != nil {
			return err
		}
	}
	for _, i := range s.liveWorkers() {
		if err := s.cluster(ctx, "worker", "start", strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return nil
}

// missedFaults names the scheduled faults that did not happen while the
// runs went on: a soak that finished before its faults proved nothing.
func (s *Soak) missedFaults(done []string) []string {
	has := func(name string) bool {
		for _, d := range done {
			if strings.HasSuffix(d, " "+name) || (name == "kill" && strings.Contains(d, "kill -9")) {
				return !strings.HasPrefix(d, "FAILED")
			}
		}
		return false
	}
	var out []string
	f := s.o.Faults
	for _, c := range []struct {
		want bool
		name string
	}{
		{f.KillEvery > 0, "kill"}, {f.RestartTemporal > 0, "restart temporal"},
		{f.RestartPostgres > 0, "restart postgres"}, {f.StopS3.For > 0, fmt.Sprintf("stop s3 for %s", f.StopS3.For)},
	} {
		if c.want && !has(c.name) {
			out = append(out, fmt.Sprintf("fault %q did not happen while the runs went on: make the soak longer (-rounds) or the fault earlier", c.name))
		}
	}
	for _, d := range done {
		if strings.HasPrefix(d, "FAILED") {
			out = append(out, "fault "+d)
		}
	}
	return out
}

// sampleRSS reads the workers' resident memory every 5 s.
func (s *Soak) sampleRSS(ctx context.Context, started time.Time) []RSSSample {
	var out []RSSSample
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		sample := RSSSample{At: time.Since(started), PerWk: map[string]int64{}}
		for _, i := range s.liveWorkers() {
			if rss := s.workerRSS(i); rss > 0 {
				sample.PerWk[strconv.Itoa(i)] = rss
			}
		}
		out = append(out, sample)
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
	}
}

func (s *Soak) workerRSS(i int) int64 {
	pid, err := os.ReadFile(filepath.Join(s.o.ClusterDir, "run", fmt.Sprintf("worker-%d.pid", i)))
	if err != nil {
		return 0
	}
	status, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

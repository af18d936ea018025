// Command soak runs Tether's soak and chaos harness against the cluster
// scripts/cluster.sh started (make soak): throughput beside the cluster's
// floor at several concurrencies, then many runs at once under worker
// kills and server, database and S3 outages, then the checks that nothing
// was lost. It exits 1 if any check fails.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/soak"
	"github.com/tether-run/tether/internal/visitbench"
)

func main() {
	root, _ := os.Getwd()
	o := soak.Options{Out: os.Stdout}
	var levels, report, target, open, metrics string
	var short bool
	var lostSamples int
	flag.StringVar(&o.Root, "root", root, "the repository (scripts/cluster.sh, bin/)")
	flag.StringVar(&o.ClusterDir, "cluster-dir", envOr("TETHER_CLUSTER_DIR", filepath.Join(root, ".tether", "cluster")), "scripts/cluster.sh's state directory")
	flag.IntVar(&o.Workers, "workers", 3, "workers the cluster runs")
	flag.StringVar(&levels, "levels", "1,10,100,200", "concurrencies to measure, comma-separated (empty: none)")
	flag.IntVar(&o.BenchRounds, "bench-rounds", 10, "writer/judge rounds of each throughput run")
	flag.IntVar(&o.Runs, "runs", 200, "runs at once in the soak (0: no soak)")
	flag.IntVar(&o.Rounds, "rounds", 13, "rounds of each soak run")
	flag.IntVar(&o.WorkspaceFiles, "files", 1000, "files in each tool run's workspace")
	flag.DurationVar(&o.Faults.KillEvery, "kill-every", 20*time.Second, "kill -9 a random worker this often (0: never)")
	flag.IntVar(&o.Faults.Kills, "kills", 0, "kill at most this many workers (0: no bound)")
	flag.DurationVar(&o.Faults.RestartTemporal, "restart-temporal", 30*time.Second, "restart the Temporal server this far into the soak (0: never)")
	flag.DurationVar(&o.Faults.RestartPostgres, "restart-postgres", 70*time.Second, "restart PostgreSQL this far into the soak (0: never)")
	flag.DurationVar(&o.Faults.StopS3.At, "stop-s3", 110*time.Second, "stop S3 this far into the soak")
	flag.DurationVar(&o.Faults.StopS3.For, "stop-s3-for", 30*time.Second, "and keep it stopped this long (0: never stop it)")
	flag.DurationVar(&o.Deadline, "deadline", 40*time.Minute, "the soak fails if it takes longer")
	flag.IntVar(&lostSamples, "lost-worker", 3, "times to kill a worker in the middle of a visit and measure what it costs (0: never)")
	flag.StringVar(&o.Upgrade.Bin, "upgrade-bin", "", "roll the cluster onto this tether-worker in the middle of the load (make upgrade-probe builds one whose workflow code differs); empty: no upgrade")
	flag.DurationVar(&o.Upgrade.At, "upgrade-at", 150*time.Second, "start the rolling upgrade this far into the soak")
	flag.DurationVar(&o.Upgrade.RampFor, "upgrade-ramp-for", 10*time.Second, "ramp the new build for this long before it is made current")
	flag.IntVar(&o.CLIRuns, "cli-runs", 10, "runs whose writer is a real agent CLI (Claude Code against a fake model), besides -runs (0: none)")
	flag.BoolVar(&o.Notify, "notify", true, "run a notice receiver, restart the workers with TETHER_NOTIFY naming it, and check each question was notified once")
	flag.StringVar(&report, "report", "", "also write the figures (Markdown) to this file")
	flag.StringVar(&target, "target", "cluster", "cluster (make cluster's, which must be up) or devserver (the embedded default make run starts: scripts/devserver.sh and one worker, started and stopped here)")
	flag.StringVar(&metrics, "server-metrics", "auto", "the Temporal server's Prometheus endpoint, whose database requests the throughput phase counts per visit (auto: the cluster's, or the dev server's; none: off)")
	flag.BoolVar(&o.Trace, "trace", false, "the workers export their spans to the soak during the throughput phase, which splits each visit's time by them")
	flag.StringVar(&open, "open", "", "open runs to hold, comma-separated and cumulative (e.g. 1000,5000): each step starts runs that wait for a person and measures the server")
	flag.BoolVar(&short, "short", false, "CI's soak: 20 runs and 2 on a real CLI, levels 1 and 10, one worker kill, one 15 s S3 stop, a rolling upgrade 35 s in (with -upgrade-bin)")
	flag.Parse()
	if short {
		levels, o.Runs, o.Rounds, o.WorkspaceFiles, o.BenchRounds = "1,10", 20, 13, 200, 5
		o.Faults.KillEvery, o.Faults.Kills, o.Faults.RestartTemporal, o.Faults.RestartPostgres = 8*time.Second, 1, 0, 0
		o.Faults.StopS3.At, o.Faults.StopS3.For = 12*time.Second, 15*time.Second
		o.Deadline, lostSamples = 10*time.Minute, 1
		o.Upgrade.At, o.Upgrade.RampFor, o.CLIRuns = 35*time.Second, 5*time.Second, 2
		// On a quiet machine every loop of twice 13 rounds, and once
		// every loop of five times 13, had asked its question by 35 s,
		// and no run was left to move between two visits: the late loops
		// are twelve times as long.
		o.LateRounds = 12 * o.Rounds
	}
	o.Levels = counts("levels", levels)
	openRuns := counts("open", open)
	if target == "devserver" {
		// The embedded default: no cluster to break, one worker.
		o.Workers, o.Runs, lostSamples, o.Notify = 1, 0, 0, false
		var extra []string
		if o.Trace {
			rcv, err := visitbench.Receive()
			if err != nil {
				fmt.Fprintln(os.Stderr, "soak:", err)
				os.Exit(1)
			}
			defer rcv.Close()
			o.Spans = rcv
			extra = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL, "OTEL_BSP_SCHEDULE_DELAY=200"}
		}
		dev, err := soak.StartDevServer(context.Background(), o.Root, extra)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(1)
		}
		o.Dev = dev
	}
	switch {
	case metrics == "none":
	case metrics != "auto":
		o.ServerMetrics = metrics
	case o.Dev != nil:
		o.ServerMetrics = o.Dev.Metrics
	default:
		o.ServerMetrics = clusterMetrics()
	}
	err := run(o, report, lostSamples, openRuns)
	if o.Dev != nil {
		o.Dev.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// clusterMetrics is the Prometheus endpoint of the cluster's Temporal
// server: its frontend's port + 767 (scripts/cluster.sh).
func clusterMetrics() string {
	_, port, err := net.SplitHostPort(os.Getenv("TEMPORAL_ADDRESS"))
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil {
		return ""
	}
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", n+767)
}

// counts parses a flag of positive whole numbers, comma-separated.
func counts(name, v string) []int {
	var out []int
	for _, l := range strings.Split(v, ",") {
		if l = strings.TrimSpace(l); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil || n < 1 {
				fmt.Fprintf(os.Stderr, "soak: -%s %q: want positive whole numbers\n", name, v)
				os.Exit(2)
			}
			out = append(out, n)
		}
	}
	return out
}

func run(o soak.Options, report string, lostSamples int, openRuns []int) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.Deadline)
	defer cancel()
	s, err := soak.New(ctx, o)
	if err != nil {
		return err
	}
	defer s.Close()
	levels, err := s.Bench(ctx)
	if err != nil {
		return err
	}
	var lost *soak.LostWorker
	if lostSamples > 0 {
		if lost, err = s.LostWorker(ctx, lostSamples); err != nil {
			return err
		}
	}
	var open []soak.Open
	if len(openRuns) > 0 {
		if open, err = s.OpenRuns(ctx, openRuns, o.Dev); err != nil {
			return err
		}
	}
	var res *soak.Result
	if o.Runs > 0 {
		if res, err = s.Load(ctx); err != nil {
			return err
		}
	}
	var b strings.Builder
	soak.Report(&b, levels, lost, res, o.Workers)
	soak.OpenReport(&b, open)
	fmt.Print(b.String())
	if report != "" {
		if err := os.WriteFile(report, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	if res != nil && len(res.Problems) > 0 {
		return fmt.Errorf("%d checks failed", len(res.Problems))
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

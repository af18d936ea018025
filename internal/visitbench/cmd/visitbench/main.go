// Command visitbench times a one-visit `tether run --follow` against the
// bare agent CLI, splits the run's time into its parts, and compares
// builds side by side (internal/visitbench; `make bench-visit`).
//
//	visitbench [-rounds 12] [-split 6] [-server devserver|cluster] [ROOT...]
//
// Each ROOT is a checkout with bin/ built (make build); the first is the
// build under test, the default the current directory. To measure a
// change against the build before it:
//
//	git worktree add /tmp/before HEAD^ && (cd /tmp/before && make build)
//	visitbench . /tmp/before
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/visitbench"
)

func main() {
	root, _ := os.Getwd()
	o := visitbench.Options{Out: os.Stdout}
	var report string
	flag.IntVar(&o.Rounds, "rounds", 12, "interleaved rounds that time whole runs")
	flag.IntVar(&o.SplitRounds, "split", 6, "more rounds, with tracing on, that split runs into parts (0: none)")
	flag.StringVar(&o.Server, "server", "devserver", "devserver (each build's scripts/devserver.sh, as make run) or cluster (make cluster's, one build)")
	flag.StringVar(&o.ClusterDir, "cluster-dir", envOr("TETHER_CLUSTER_DIR", filepath.Join(root, ".tether", "cluster")), "scripts/cluster.sh's state directory")
	flag.IntVar(&o.Workers, "workers", 3, "workers the cluster runs")
	flag.BoolVar(&o.Unconfined, "unconfined", false, "run the workers with TETHER_SANDBOX=off")
	flag.BoolVar(&o.NoAsk, "no-ask", false, "add a side: the first build with its node's ask_user: false (no ask_user server)")
	flag.StringVar(&report, "report", "", "also write the figures (Markdown) to this file")
	flag.StringVar(&o.Histories, "histories", "", "write the last split run's history of each build to this directory")
	flag.Parse()
	o.Roots = flag.Args()
	if len(o.Roots) == 0 {
		o.Roots = []string{root}
	}
	for i, r := range o.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			fail(err)
		}
		o.Roots[i] = abs
	}
	clis, err := exec.Command("bash", filepath.Join(o.Roots[0], "scripts", "tools.sh"), "clis").Output()
	if err != nil {
		fail(fmt.Errorf("scripts/tools.sh clis: %w", err))
	}
	o.CLIs = strings.TrimSpace(string(clis))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	res, err := visitbench.Run(ctx, o)
	if err != nil {
		fail(err)
	}
	var b strings.Builder
	server := "dev server `make run` starts (scripts/devserver.sh)"
	if o.Server == "cluster" {
		server = fmt.Sprintf("cluster `make cluster` starts (%d workers)", o.Workers)
	}
	visitbench.Report(&b, res, server)
	fmt.Print(b.String())
	if report != "" {
		if err := os.WriteFile(report, []byte(b.String()), 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "visitbench:", err)
	os.Exit(1)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

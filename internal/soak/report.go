package soak

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/visitbench"
)

// Report writes the figures as Markdown, as docs/operations.md shows them.
func Report(w io.Writer, levels []Level, lost *LostWorker, res *Result, workers int) {
	if lost != nil && len(lost.Restarted) > 0 {
		fmt.Fprintf(w, "\nA worker killed 1 s into a 4 s tool visit (heartbeat timeout %s), %d times: the visit started again on a worker after %s (median; worst %s), the run was done after %s (median; worst %s).\n",
			lost.Heartbeat, len(lost.Restarted),
			ms(lost.Restarted[len(lost.Restarted)/2]), ms(lost.Restarted[len(lost.Restarted)-1]),
			ms(lost.Done[len(lost.Done)/2]), ms(lost.Done[len(lost.Done)-1]))
	}
	if len(levels) > 0 {
		fmt.Fprintf(w, "\n| runs at once | Tether visits/s | p50 | p99 | floor activities/s | p50 | p99 | Tether / floor |\n|---|---|---|---|---|---|---|---|\n")
		for _, l := range levels {
			fmt.Fprintf(w, "| %d | %.1f | %s | %s | %.1f | %s | %s | %.2f |\n", l.Runs,
				l.Tether.PerSec, ms(l.Tether.P50), ms(l.Tether.P99),
				l.Floor.PerSec, ms(l.Floor.P50), ms(l.Floor.P99), l.Tether.PerSec/l.Floor.PerSec)
		}
	}
	parts(w, levels)
	if res == nil {
		return
	}
	fmt.Fprintf(w, "\nSoak: %d runs, %d visits in %s (%.1f visits/s) on %d workers, under these faults:\n\n",
		res.Runs, res.Visits, res.Elapsed.Round(time.Second), float64(res.Visits)/res.Elapsed.Seconds(), workers)
	for _, f := range res.Faults {
		fmt.Fprintf(w, "- %s\n", f)
	}
	if len(res.RSS) > 0 {
		fmt.Fprintf(w, "\nWorker RSS (MiB) over the soak, each worker: ")
		var parts []string
		for _, i := range []int{0, len(res.RSS) / 2, len(res.RSS) - 1} {
			parts = append(parts, fmt.Sprintf("at %s %s", res.RSS[i].At.Round(time.Second), rssOf(res.RSS[i])))
		}
		var peak int64
		for _, s := range res.RSS {
			for _, v := range s.PerWk {
				peak = max(peak, v)
			}
		}
		fmt.Fprintf(w, "%s; peak %d.\n", strings.Join(parts, "; "), peak>>20)
	}
	if n := res.Notices; n != nil {
		fmt.Fprintf(w, "\nNotices (a receiver on loopback named by every worker's TETHER_NOTIFY): %d questions asked, %d notified exactly once, %d never notified, %d notified more than once; %d runs completed, %d completion notices; %d requests in all (%s), %d of them a notice sent again under its key (same body), %d with a bad signature.\n",
			n.Questions, n.Notified, len(n.Unnotified), len(n.Twice), n.Completed, n.EndNotices, n.Requests, byEvent(n.ByEvent), n.Repeats, n.BadSignatures)
	}
	if u := res.Upgraded; u != nil && u.Skipped == "" {
		fmt.Fprintf(w, "\nRolling upgrade (scripts/cluster.sh upgrade) from build %s to %s, whose workflow code runs one more activity before every visit: %s in all; %d runs moved while they waited for a person, %d between two visits; tether upgrade-runs saw %d move (%s); the old build drained %s after the new one became current, and its workers were stopped; %d executions read back, the new build's activity ran %d times.\n",
			u.From, u.To, u.Took.Round(time.Second), u.MovedWaiting, u.MovedBetween, len(u.Moves), moveTimes(u.Moves), u.Drained, u.Executions, u.Probes)
	}
	fmt.Fprintf(w, "\nBucket objects before the soak: %d; after `tether delete` of every soak run: %d.\n", res.StoreObjectsBefore, res.StoreObjectsAfter)
	fmt.Fprintf(w, "Entries of the soak's runs left in each worker's caches (working directories, object stores, session roots): %v.\n", res.Leftovers)
	if len(res.Problems) == 0 {
		notices := ""
		if res.Notices != nil {
			notices = " every question was notified exactly once, and every completed run's end;"
		}
		upgraded := ""
		if res.Upgraded != nil && res.Upgraded.Skipped == "" {
			upgraded = " no workflow task failed as non-deterministic, and every run ended on the new build;"
		}
		fmt.Fprintf(w, "\nChecks: every run completed; every conversation and workspace is exact; every named blob is there;%s%s nothing is left after delete.\n", notices, upgraded)
		return
	}
	fmt.Fprintf(w, "\n%d problems:\n", len(res.Problems))
	for _, p := range res.Problems {
		fmt.Fprintf(w, "- %s\n", p)
	}
}

// moveTimes is the median and the longest of the moves' times.
func moveTimes(m map[string]time.Duration) string {
	if len(m) == 0 {
		return "none"
	}
	var d []time.Duration
	for _, v := range m {
		d = append(d, v)
	}
	d = sortDurations(d)
	return fmt.Sprintf("median %s, longest %s, from being asked to being pinned to the new build", d[len(d)/2], d[len(d)-1])
}

func byEvent(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

func rssOf(s RSSSample) string {
	keys := make([]string, 0, len(s.PerWk))
	for k := range s.PerWk {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d", s.PerWk[k]>>20))
	}
	return strings.Join(parts, "/")
}

// parts writes where a visit's (a floor step's) time went at each level.
func parts(w io.Writer, levels []Level) {
	if len(levels) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWhere a visit's time goes, ms per visit (a floor step's, per step): each part summed over every run's history and divided by the visits.\n\n")
	var heads []string
	var cols [][]visitbench.Part
	for _, l := range levels {
		heads = append(heads, fmt.Sprintf("floor, %d runs", l.Runs), fmt.Sprintf("Tether, %d runs", l.Runs))
		cols = append(cols, l.FloorParts, l.TetherParts)
	}
	visitbench.Table(w, heads, cols)
	fmt.Fprintf(w, "\nProcessor time per visit (floor step), ms:\n\n| | %s |\n|---|%s\n", strings.Join(heads, " | "), strings.Repeat("---|", len(heads)))
	var names []string
	for _, l := range levels {
		for _, c := range []cpuUse{l.FloorCPU, l.TetherCPU} {
			for k := range c {
				if !slices.Contains(names, k) {
					names = append(names, k)
				}
			}
		}
	}
	slices.Sort(names)
	for _, n := range append(names, "all") {
		fmt.Fprintf(w, "| %s |", n)
		for _, l := range levels {
			for _, c := range []cpuUse{l.FloorCPU, l.TetherCPU} {
				var v time.Duration
				for k, d := range c {
					if k == n || n == "all" {
						v += d
					}
				}
				fmt.Fprintf(w, " %.1f |", float64(v.Microseconds())/1000)
			}
		}
		fmt.Fprintln(w)
	}
}

// OpenReport writes how the server held open runs.
func OpenReport(w io.Writer, open []Open) {
	if len(open) == 0 {
		return
	}
	fmt.Fprintf(w, "\n| open runs (waiting for a person) | started at | all listed as waiting after | an answer finished its run in (p50 / worst of 20) | errors | server RSS | database |\n|---|---|---|---|---|---|---|\n")
	for _, o := range open {
		fmt.Fprintf(w, "| %d | %.0f runs/s | %s | %s / %s | %d | %d MiB | %d MiB |\n", o.Runs, o.StartPerSec, o.Waiting.Round(100*time.Millisecond),
			ms(o.AnswerP50), ms(o.AnswerMax), o.Errors, o.RSS>>20, o.DB>>20)
	}
}

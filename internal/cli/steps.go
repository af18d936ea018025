package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// stepOutcome is how a step's outcome reads in a path: ok, failed, exit 1,
// timeout, budget stop. A step recorded before steps had outcomes reads as
// its status.
func stepOutcome(s runstore.Step) string {
	switch s.Outcome {
	case runstore.OutcomeExited:
		return fmt.Sprintf("exit %d", s.ExitCode)
	case runstore.OutcomeTimedOut:
		return "timeout"
	case runstore.OutcomeBudget:
		return "budget stop"
	case "":
		return s.Status
	}
	return s.Outcome
}

// stepGood reports a step that went as it should: a tool that exited
// non-zero or timed out finished its visit, and still did not succeed.
func stepGood(s runstore.Step) bool {
	return s.Status == "ok" && (s.Outcome == "" || s.Outcome == runstore.OutcomeOK)
}

// stepDetail is what a step's line says after its duration: the visit's
// own usage, then its line of output. A step recorded before steps kept
// their usage shows the node's output's, when that output is the step's.
func stepDetail(st *runapi.State, s runstore.Step) string {
	u := s.Usage
	if u.IsZero() {
		u, _ = stepUsage(st, s.Node, s.Visit, s.Status)
	}
	if u.IsZero() {
		return s.Detail
	}
	return strings.TrimSpace(usageText(u) + "  " + s.Detail)
}

// stepLine is one visit as `--follow` prints it:
// `✗ check            visit 2   exit 1  512ms  FAIL: TestAdd ⏎ FAIL`.
func stepLine(st *runapi.State, s runstore.Step) string {
	mark := "✓"
	if !stepGood(s) {
		mark = "✗"
	}
	line := fmt.Sprintf("%s %-16s visit %-3d %-7s %s", mark, s.Node, s.Visit, stepOutcome(s), (time.Duration(s.DurationMS) * time.Millisecond).String())
	if d := stepDetail(st, s); d != "" {
		line += "  " + d
	}
	return line
}

// pathLine is one visit as `tether status` lists it under path:.
func pathLine(st *runapi.State, s runstore.Step) string {
	return strings.TrimRight(fmt.Sprintf("  %-16s visit %-3d %-7s %-8s %s", s.Node, s.Visit, stepOutcome(s), (time.Duration(s.DurationMS)*time.Millisecond).String(), stepDetail(st, s)), " ")
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/excerpt"
	"github.com/tether-run/tether/internal/runapi"
)

// visitActivities are the activity types that run an agent visit and
// heartbeat its progress: Visit (VisitBranch in a fan-out branch), and
// ExecuteNode in runs recorded before one-trip visits.
var visitActivities = []string{"Visit", "VisitBranch", "ExecuteNode"}

// runningVisits is the progress of the run's visits in flight, as their
// activities last heartbeated it, ordered by node and visit.
func (a *app) runningVisits(ctx context.Context, id string) ([]agent.Progress, error) {
	d, err := a.describe(ctx, id)
	if err != nil {
		return nil, err
	}
	return pendingProgress(d), nil
}

// pendingProgress is the progress in a run's description (nil: none). A
// visit that has reported nothing yet is left out.
func pendingProgress(d *workflowservice.DescribeWorkflowExecutionResponse) []agent.Progress {
	dc := converter.GetDefaultDataConverter()
	var out []agent.Progress
	for _, pa := range d.GetPendingActivities() {
		if !slices.Contains(visitActivities, pa.GetActivityType().GetName()) {
			continue
		}
		payloads := pa.GetHeartbeatDetails().GetPayloads()
		if len(payloads) == 0 {
			continue
		}
		var p agent.Progress
		// Other heartbeats (a store retry's note) are not progress.
		if dc.FromPayload(payloads[0], &p) != nil || p.Node == "" {
			continue
		}
		out = append(out, p.Bound())
	}
	slices.SortFunc(out, func(x, y agent.Progress) int {
		if c := strings.Compare(x.Node, y.Node); c != 0 {
			return c
		}
		return x.Visit - y.Visit
	})
	return out
}

// progressLine is how a running visit shows:
// `writer visit 3 · Edit main.go · 12.4k tokens · 38 s`.
func progressLine(p agent.Progress) string {
	parts := []string{progressKey(p)}
	if p.Elapsed > 0 {
		parts = append(parts, duration(p.Elapsed))
	}
	return strings.Join(parts, " · ")
}

// progressKey is the progress line without the elapsed time: what must
// change for `--follow` to print the visit's progress again.
func progressKey(p agent.Progress) string {
	parts := []string{fmt.Sprintf("%s visit %d", p.Node, p.Visit)}
	switch {
	case p.Activity != "":
		parts = append(parts, p.Activity)
	case p.Text != "":
		parts = append(parts, fmt.Sprintf("%q", excerpt.Tail(excerpt.Flat(p.Text), 60)))
	default:
		parts = append(parts, "thinking")
	}
	if n := p.Usage.Tokens(); n > 0 {
		parts = append(parts, tokens(n))
	}
	return strings.Join(parts, " · ")
}

// tokens is a token count as a person reads it: 950 tokens, 12.4k tokens,
// 1.2M tokens.
func tokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d tokens", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk tokens", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.1fM tokens", float64(n)/1e6)
	}
}

// duration is an elapsed time to the second: 38 s, 4 min 5 s, 1 h 2 min.
func duration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 3600:
		return fmt.Sprintf("%d min %d s", s/60, s%60)
	default:
		return fmt.Sprintf("%d h %d min", s/3600, s%3600/60)
	}
}

// usageText is a visit's usage in brief: 12.4k tokens, $0.0123; the cost
// shows only when the CLI priced the visit.
func usageText(u agent.Usage) string {
	s := tokens(u.Tokens())
	if u.CostKnown {
		s += fmt.Sprintf(", $%.4f", u.CostUSD)
	}
	return s
}

// usageDetail is a visit's usage in full.
func usageDetail(u agent.Usage) string {
	cost := "cost unknown"
	if u.CostKnown {
		cost = fmt.Sprintf("$%.4f", u.CostUSD)
	}
	return fmt.Sprintf("%s (in %d, out %d, cache read %d, cache write %d), %s",
		tokens(u.Tokens()), u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, cost)
}

// outputUsage is the usage an agent visit's output carries, if any.
func outputUsage(out map[string]any) (agent.Usage, bool) {
	raw, ok := out[agent.UsageKey]
	if !ok {
		return agent.Usage{}, false
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return agent.Usage{}, false
	}
	var u agent.Usage
	if json.Unmarshal(b, &u) != nil || u.IsZero() {
		return agent.Usage{}, false
	}
	return u, true
}

// stepUsage is the usage of a step that a state shows: the node's output is
// that visit's only while the step is the node's latest visit and it
// succeeded.
func stepUsage(st *runapi.State, node string, visit int, status string) (agent.Usage, bool) {
	if st == nil || status != "ok" || st.Visits[node] != visit {
		return agent.Usage{}, false
	}
	return outputUsage(st.Outputs[node])
}

// nodeUsages describes what the run cost: in all, then each agent node's
// visits together ("writer (3 visits): 12.4k tokens (in …), $0.0123").
// A run recorded before usage was summed shows each node's latest visit,
// as its output reports it.
func nodeUsages(st *runapi.State) []string {
	var out []string
	if len(st.Usage) > 0 {
		out = append(out, "run: "+usageDetail(st.TotalUsage))
		for _, node := range slices.Sorted(maps.Keys(st.Usage)) {
			out = append(out, fmt.Sprintf("%s (%s): %s", node, plural(st.Visits[node], "visit"), usageDetail(st.Usage[node])))
		}
		return out
	}
	for _, node := range slices.Sorted(maps.Keys(st.Outputs)) {
		if u, ok := outputUsage(st.Outputs[node]); ok {
			out = append(out, fmt.Sprintf("%s visit %d: %s", node, st.Visits[node], usageDetail(u)))
		}
	}
	return out
}

// plural is "1 visit", "2 visits".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

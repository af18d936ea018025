package workflows

import (
	"strings"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/excerpt"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// tailLines is how many of a failed tool's last lines its step keeps.
const tailLines = 3

// finishedStep completes the path step of a visit that finished with out:
// its outcome, its own usage, a tool's exit code, and one line of what it
// said. usage is what the visit reported; a visit of a run recorded before
// visits reported it has its usage on its output only.
func finishedStep(step runstore.Step, node *graph.Node, out map[string]any, usage agent.Usage) runstore.Step {
	step.Outcome = runstore.OutcomeOK
	step.Usage = usage
	if usage.IsZero() {
		step.Usage = outputUsage(out)
	}
	if node.Kind != graph.KindTool {
		step.Detail = firstLine(out, "text", "answer")
		return step
	}
	// A field missing or of the wrong type reads as its zero value, as
	// it always has.
	tool, _ := runapi.ToolOutputOf(out)
	step.ExitCode, step.TimedOut = tool.ExitCode, tool.TimedOut
	stream := tool.Stderr
	if strings.TrimSpace(stream) == "" {
		stream = tool.Stdout
	}
	switch {
	case step.TimedOut:
		step.Outcome = runstore.OutcomeTimedOut
		step.Detail = lastLines(stream, tailLines)
	case step.ExitCode != 0:
		step.Outcome = runstore.OutcomeExited
		step.Detail = lastLines(stream, tailLines)
	default:
		step.Detail = lastLines(stream, 1)
	}
	return step
}

// stoppedStep completes the path step of a visit a spent budget stopped
// mid-turn, with why and what it had cost.
func stoppedStep(step runstore.Step, why string, usage agent.Usage) runstore.Step {
	step.Status = runstore.StepStopped
	step.Outcome = runstore.OutcomeBudget
	step.Usage = usage
	step.Detail = excerpt.Head(why, runstore.StepDetailBytes)
	return step
}

// failedStep completes the path step of a visit that failed with err.
func failedStep(step runstore.Step, err error) runstore.Step {
	step.Status = "failed"
	step.Outcome = runstore.OutcomeFailed
	step.Detail = excerpt.Head(excerpt.Flat(activities.ErrorText(err)), runstore.StepDetailBytes)
	return step
}

// firstLine is the first line of the first of keys that holds a string.
func firstLine(out map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := out[k].(string); ok && strings.TrimSpace(v) != "" {
			return oneLine(strings.TrimSpace(v), 100)
		}
	}
	return ""
}

// lastLines is the last n lines of s that are not blank, joined by " ⏎ ",
// within StepDetailBytes: what a tool said last is why it failed.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return excerpt.Head(strings.Join(lines, " ⏎ "), runstore.StepDetailBytes)
}

// number is a JSON number of an output as an int (runapi.Number), 0 for
// anything else: activity results decode as float64, test environments
// may hand over ints.
func number(v any) int {
	n, _ := runapi.Number(v)
	return n
}

// outputUsage is the usage an agent's output carries under agent.UsageKey
// (a visit recorded before visits reported usage has it there only), read
// field by field: workflow code decodes nothing by reflection.
func outputUsage(out map[string]any) agent.Usage {
	m, ok := out[agent.UsageKey].(map[string]any)
	if !ok {
		return agent.Usage{}
	}
	u := agent.Usage{
		InputTokens:      int64(number(m["input_tokens"])),
		OutputTokens:     int64(number(m["output_tokens"])),
		CacheReadTokens:  int64(number(m["cache_read_tokens"])),
		CacheWriteTokens: int64(number(m["cache_write_tokens"])),
	}
	u.CostUSD, _ = m["cost_usd"].(float64)
	u.CostKnown, _ = m["cost_known"].(bool)
	return u
}

package visitbench

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Report writes the figures as Markdown: the whole run against the bare
// CLI, then the parts.
func Report(w io.Writer, res *Result, server string) {
	fmt.Fprintf(w, "One-visit `tether run --follow` (claude_code, persist) against `claude -p`, on the %s; load average %s at the start, %s at the end.\n\n", server, res.Load0, res.Load1)
	head := "| | bare `claude -p` |"
	sep := "|---|---|"
	for i, s := range res.Sides {
		head += fmt.Sprintf(" %s: %s |", string(rune('a'+i)), s.Root)
		sep += "---|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, sep)
	row := func(name string, bare string, cell func(SideResult) string) {
		line := "| " + name + " | " + bare + " |"
		for _, s := range res.Sides {
			line += " " + cell(s) + " |"
		}
		fmt.Fprintln(w, line)
	}
	row(fmt.Sprintf("wall time, median of %d rounds", len(res.Bare)), ms(medianDuration(res.Bare)), func(s SideResult) string { return ms(medianDuration(s.Wall)) })
	row("fastest / slowest", ms(slices.Min(nonEmpty(res.Bare)))+" / "+ms(slices.Max(nonEmpty(res.Bare))), func(s SideResult) string {
		return ms(slices.Min(nonEmpty(s.Wall))) + " / " + ms(slices.Max(nonEmpty(s.Wall)))
	})
	row("against the bare CLI, median of the rounds' ratios", "1", func(s SideResult) string { return ratio(s.Wall, res.Bare) })
	row("added to the bare CLI, median of the rounds", "", func(s SideResult) string { return ms(medianDiff(s.Wall, res.Bare)) })
	cpu := func(f func(CPU) time.Duration) func(SideResult) string {
		return func(s SideResult) string { return ms(f(s.CPU)) }
	}
	row("CPU: `tether` (the CLI process)", "", cpu(func(c CPU) time.Duration { return c.CLI }))
	row("CPU: the worker", "", cpu(func(c CPU) time.Duration { return c.Worker }))
	row("CPU: the worker's children (sandbox and agent CLI)", ms(medianDuration(res.BareCPU)), cpu(func(c CPU) time.Duration { return c.Children }))
	row("CPU: the Temporal server", "", cpu(func(c CPU) time.Duration { return c.Server }))
	if len(res.Sides) > 1 {
		row("against a, median of the rounds' ratios", "", func(s SideResult) string { return ratio(s.Wall, res.Sides[0].Wall) })
	}
	if len(res.Sides[0].Splits) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWhere a run's time goes: medians of %d more rounds with tracing on (the parts' medians need not add up to the median whole).\n\n", len(res.Sides[0].Splits))
	var heads []string
	var cols [][]Part
	for i, s := range res.Sides {
		heads = append(heads, fmt.Sprintf("%s, ms", string(rune('a'+i))))
		cols = append(cols, Median(s.Splits))
	}
	Table(w, heads, cols)
	line := "| the bare `claude -p` in these rounds |"
	for range res.Sides {
		line += " " + msf(medianDuration(res.SplitBare)) + " |"
	}
	fmt.Fprintln(w, line)
	events := "| history events of a run |"
	for _, s := range res.Sides {
		events += fmt.Sprintf(" %d |", medianInt(s.Events))
	}
	fmt.Fprintln(w, events)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }

func msf(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

// ratio is the median over rounds of a[i]/b[i].
func ratio(a, b []time.Duration) string {
	n := min(len(a), len(b))
	if n == 0 {
		return ""
	}
	r := make([]float64, n)
	for i := range n {
		r[i] = float64(a[i]) / float64(b[i])
	}
	slices.Sort(r)
	return fmt.Sprintf("%.2f×", r[n/2])
}

// medianDiff is the median over rounds of a[i]-b[i].
func medianDiff(a, b []time.Duration) time.Duration {
	n := min(len(a), len(b))
	d := make([]time.Duration, n)
	for i := range n {
		d[i] = a[i] - b[i]
	}
	return medianDuration(d)
}

func nonEmpty(d []time.Duration) []time.Duration {
	if len(d) == 0 {
		return []time.Duration{0}
	}
	return d
}

func medianInt(v []int) int {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

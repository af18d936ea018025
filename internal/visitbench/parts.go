package visitbench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/tether-run/tether/internal/telemetry"
)

// The parts a run's wall time is split into, in the order a one-visit
// run passes through them. A part's name says where the time went; the
// ones of the worker's own spans are indented under the part they split.
const (
	PartStart         = "tether run: start the CLI, check the id, start the workflow"
	PartFirstQueued   = "first workflow task: to a worker"
	PartFirstTask     = "first workflow task: run"
	PartDispatch      = "activity: to a worker"
	PartActivity      = "visit activity"
	PartTaskQueued    = "later workflow tasks: to a worker"
	PartTask          = "later workflow tasks: run"
	PartAfterClose    = "after the run closed, until the CLI exits"
	PartOther         = "other"
	subActivityStart  = "  delivery to the activity's code"
	subActivityRest   = "  the rest of the activity"
	subTaskRest       = "  workflow code and the SDK"
	subLocalPrefix    = "  local activity "
	subPhasePrefix    = "  "
	phaseRunName      = "  run: sandbox start and the CLI"
	spanRunActivity   = "RunActivity:"
	spanVisitActivity = "RunActivity:Visit"
)

// Part is a named share of a run's wall time.
type Part struct {
	Name string
	D    time.Duration
}

// Span is one span a worker exported: its name, its time, and the run
// (workflow id) it belongs to.
type Span struct {
	Name       string
	Start, End time.Time
	Run        string
}

// Split divides a closed run's history, from start (the moment `tether
// run` was started; zero: the history's own start) to end (the moment it
// exited; zero: the run's close), into parts, and splits the workflow
// tasks and the visit activities by the spans of the run that fall inside
// them. The parts add up to the whole.
func Split(events []*historypb.HistoryEvent, spans []Span, start, end time.Time) []Part {
	acc := map[string]time.Duration{}
	var order []string
	add := func(name string, d time.Duration) {
		if _, ok := acc[name]; !ok {
			order = append(order, name)
		}
		acc[name] += d
	}
	if len(events) == 0 {
		return nil
	}
	first := events[0].GetEventTime().AsTime()
	if !start.IsZero() {
		add(PartStart, first.Sub(start))
	}
	label := PartFirstQueued
	tasks := 0
	var closed time.Time
	at := first
	for _, ev := range events[1:] {
		t := ev.GetEventTime().AsTime()
		if t.Before(at) {
			t = at
		}
		if next, ok := labelAfter(ev.GetEventType(), tasks); ok || isClose(ev.GetEventType()) {
			splitInterval(add, label, at, t, spans)
			at = t
			if ok {
				label = next
			}
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			tasks++
		}
		if isClose(ev.GetEventType()) {
			closed = t
			break
		}
	}
	if closed.IsZero() {
		return partsOf(acc, order)
	}
	if !end.IsZero() {
		add(PartAfterClose, end.Sub(closed))
	}
	return partsOf(acc, order)
}

// labelAfter is the part the time after an event of type typ belongs to;
// false: the event does not change it.
func labelAfter(typ enumspb.EventType, tasksStarted int) (string, bool) {
	switch typ {
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
		if tasksStarted == 0 {
			return PartFirstQueued, true
		}
		return PartTaskQueued, true
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
		if tasksStarted == 0 {
			return PartFirstTask, true
		}
		return PartTask, true
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
		return PartOther, true
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		return PartDispatch, true
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
		return PartActivity, true
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
		return PartOther, true
	}
	return "", false
}

func isClose(typ enumspb.EventType) bool {
	switch typ {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
		return true
	}
	return false
}

// splitInterval adds [from, to) to label, split by the spans inside it:
// a workflow task by the local activities it ran, a visit activity by the
// visit's phases.
func splitInterval(add func(string, time.Duration), label string, from, to time.Time, spans []Span) {
	total := to.Sub(from)
	if total <= 0 {
		add(label, 0)
		return
	}
	inside := func(s Span) bool { return !s.Start.Before(from) && !s.End.After(to) }
	switch label {
	case PartFirstTask, PartTask:
		rest := total
		for _, s := range spans {
			if inside(s) && strings.HasPrefix(s.Name, spanRunActivity) && s.Name != spanVisitActivity {
				d := s.End.Sub(s.Start)
				add(label+"\n"+subLocalPrefix+strings.TrimPrefix(s.Name, spanRunActivity), d)
				rest -= d
			}
		}
		if rest != total {
			add(label+"\n"+subTaskRest, rest)
		}
		add(label, total)
	case PartActivity:
		var visit *Span
		for i := range spans {
			if spans[i].Name == spanVisitActivity && inside(spans[i]) {
				visit = &spans[i]
			}
		}
		add(label, total)
		if visit == nil {
			return
		}
		rest := total - visit.Start.Sub(from)
		add(label+"\n"+subActivityStart, visit.Start.Sub(from))
		for _, s := range spans {
			if inside(s) && strings.HasPrefix(s.Name, telemetry.VisitSpanName+".") {
				d := s.End.Sub(s.Start)
				add(label+"\n"+phaseName(s.Name), d)
				rest -= d
			}
		}
		add(label+"\n"+subActivityRest, rest)
	default:
		add(label, total)
	}
}

// phaseName is how a visit phase reads in the table.
func phaseName(span string) string {
	if span == telemetry.PhaseRun {
		return phaseRunName
	}
	return subPhasePrefix + strings.ReplaceAll(strings.TrimPrefix(span, telemetry.VisitSpanName+"."), "_", " ")
}

// partsOf lists the accumulated parts, each sub-part right after the
// part it splits.
func partsOf(acc map[string]time.Duration, order []string) []Part {
	var tops []string
	for _, n := range order {
		if !strings.Contains(n, "\n") {
			tops = append(tops, n)
		}
	}
	var out []Part
	for _, top := range tops {
		out = append(out, Part{Name: top, D: acc[top]})
		for _, n := range order {
			if parent, sub, ok := strings.Cut(n, "\n"); ok && parent == top {
				out = append(out, Part{Name: sub, D: acc[n]})
			}
		}
	}
	return out
}

// IsSub reports a part that splits the part before it.
func (p Part) IsSub() bool { return strings.HasPrefix(p.Name, " ") }

// Median is the part-by-part median of several runs' splits: each part's
// median over the runs (a run without the part counts zero), in the order
// the parts first appear.
func Median(runs [][]Part) []Part {
	return combine(runs, func(ds []time.Duration) time.Duration { return medianDuration(ds) })
}

// Per is several runs' splits summed part by part and divided by n (the
// visits they made): where one visit's time went, on average.
func Per(runs [][]Part, n int) []Part {
	return combine(runs, func(ds []time.Duration) time.Duration {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		return sum / time.Duration(max(n, 1))
	})
}

// combine lists every part of runs, each sub-part under the part it
// splits, in the order they first appear, with f of its values over the
// runs (a run without the part gives zero).
func combine(runs [][]Part, f func([]time.Duration) time.Duration) []Part {
	var tops []string
	subs := map[string][]string{}
	vals := map[[2]string][]time.Duration{}
	for i, r := range runs {
		parent := ""
		for _, p := range r {
			k := [2]string{"", p.Name}
			if p.IsSub() {
				k[0] = parent
				if !slices.Contains(subs[parent], p.Name) {
					subs[parent] = append(subs[parent], p.Name)
				}
			} else {
				parent = p.Name
				if !slices.Contains(tops, p.Name) {
					tops = append(tops, p.Name)
				}
			}
			v := vals[k]
			for len(v) <= i {
				v = append(v, 0)
			}
			v[i] += p.D
			vals[k] = v
		}
	}
	value := func(k [2]string) time.Duration {
		v := vals[k]
		for len(v) < len(runs) {
			v = append(v, 0)
		}
		return f(v)
	}
	var out []Part
	for _, top := range tops {
		out = append(out, Part{Name: top, D: value([2]string{"", top})})
		for _, sub := range subs[top] {
			out = append(out, Part{Name: sub, D: value([2]string{top, sub})})
		}
	}
	return out
}

func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// Table writes parts side by side as a Markdown table, one column of
// milliseconds per set under its head, each sub-part under the part it
// splits (a sub-part's name may recur under another part).
func Table(w io.Writer, heads []string, cols [][]Part) {
	type key struct{ parent, name string }
	var rows []key
	cells := make([]map[key]time.Duration, len(cols))
	for i, c := range cols {
		cells[i] = map[key]time.Duration{}
		parent := ""
		for _, p := range c {
			k := key{name: p.Name}
			if p.IsSub() {
				k.parent = parent
			} else {
				parent = p.Name
			}
			cells[i][k] += p.D
		}
	}
	// Tops in the order they first appear; each top's subs right after it.
	var tops []string
	subs := map[string][]string{}
	for _, c := range cols {
		parent := ""
		for _, p := range c {
			if p.IsSub() {
				if !slices.Contains(subs[parent], p.Name) {
					subs[parent] = append(subs[parent], p.Name)
				}
				continue
			}
			parent = p.Name
			if !slices.Contains(tops, p.Name) {
				tops = append(tops, p.Name)
			}
		}
	}
	for _, t := range tops {
		rows = append(rows, key{name: t})
		for _, s := range subs[t] {
			rows = append(rows, key{t, s})
		}
	}
	fmt.Fprintf(w, "| part | %s |\n|---|%s\n", strings.Join(heads, " | "), strings.Repeat("---|", len(heads)))
	for _, r := range rows {
		line := "| " + strings.ReplaceAll(r.name, "  ", "&nbsp;&nbsp;&nbsp;&nbsp;") + " |"
		for i := range cols {
			cell := ""
			if d, ok := cells[i][r]; ok {
				cell = fmt.Sprintf("%.1f", float64(d.Microseconds())/1000)
			}
			line += " " + cell + " |"
		}
		fmt.Fprintln(w, line)
	}
}

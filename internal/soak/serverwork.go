package soak

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ServerWork is what the Temporal server did for a phase, per visit (per
// floor step), from its own Prometheus metrics: its requests to its
// database (persistence_requests, and the time they took,
// persistence_latency_sum; visibility's apart), by operation.
type ServerWork struct {
	Requests, Visibility float64
	// Time is the database's time per visit: on the dev server's SQLite,
	// whose one connection serves every request in turn, the time no
	// other request could use it.
	Time time.Duration
	// Ops are the operations, most requests first.
	Ops []OpCount
}

// OpCount is one operation's requests per visit.
type OpCount struct {
	Op string
	N  float64
}

// serverMetrics is a scrape of the counters ServerWork reads.
type serverMetrics struct {
	ops        map[string]float64
	seconds    float64
	visibility float64
}

// scrape reads the server's metrics at url ("": none).
func scrape(ctx context.Context, url string) (*serverMetrics, error) {
	if url == "" {
		return nil, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape the Temporal server's metrics at %s: %w", url, err)
	}
	defer resp.Body.Close()
	m := &serverMetrics{ops: map[string]float64{}}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch name {
		case "persistence_requests":
			m.ops[label(labels, "operation")] += v
		case "persistence_latency_sum":
			m.seconds += v
		case "visibility_persistence_requests":
			m.visibility += v
		}
	}
	return m, sc.Err()
}

// label is the value of a label in a Prometheus label list.
func label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// work is what happened between two scrapes, per visit.
func work(before, after *serverMetrics, visits int) *ServerWork {
	if before == nil || after == nil || visits == 0 {
		return nil
	}
	n := float64(visits)
	w := &ServerWork{
		Visibility: (after.visibility - before.visibility) / n,
		Time:       time.Duration((after.seconds - before.seconds) / n * float64(time.Second)),
	}
	for op, v := range after.ops {
		if d := (v - before.ops[op]) / n; d > 0 {
			w.Ops = append(w.Ops, OpCount{op, d})
			w.Requests += d
		}
	}
	slices.SortFunc(w.Ops, func(a, b OpCount) int {
		switch {
		case a.N > b.N:
			return -1
		case a.N < b.N:
			return 1
		}
		return strings.Compare(a.Op, b.Op)
	})
	return w
}

func (w *ServerWork) String() string {
	if w == nil {
		return ""
	}
	var top []string
	for _, o := range w.Ops[:min(6, len(w.Ops))] {
		top = append(top, fmt.Sprintf("%s %.1f", o.Op, o.N))
	}
	return fmt.Sprintf("%.1f database requests (%s), %.1f ms of them; %.1f visibility requests", w.Requests, strings.Join(top, ", "), float64(w.Time.Microseconds())/1000, w.Visibility)
}

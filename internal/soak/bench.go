package soak

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/visitbench"
)

// Level is the throughput of one concurrency: Tether's persist runs beside
// the floor's workflows of as many do-nothing activities.
type Level struct {
	Runs   int
	Tether Throughput
	Floor  Throughput
	// TetherParts and FloorParts are where a visit's (a floor step's)
	// time went, from the runs' histories (and, with Options.Trace, the
	// workers' spans): each part's sum over every run, per visit.
	TetherParts, FloorParts []visitbench.Part
	// TetherServer and FloorServer are what the Temporal server did per
	// visit (floor step), when Options.ServerMetrics names its metrics.
	TetherServer, FloorServer *ServerWork
	// TetherCPU and FloorCPU are the processor time each part of the
	// topology used, per visit (floor step).
	TetherCPU, FloorCPU cpuUse
}

// Throughput is visits (activities) per second over a phase and the
// latency of one, as the workflow saw it.
type Throughput struct {
	Visits   int
	Elapsed  time.Duration
	PerSec   float64
	P50, P99 time.Duration
}

func throughput(lat []time.Duration, elapsed time.Duration) Throughput {
	s := sortDurations(lat)
	return Throughput{
		Visits: len(s), Elapsed: elapsed, PerSec: float64(len(s)) / elapsed.Seconds(),
		P50: percentile(s, 50), P99: percentile(s, 99),
	}
}

// Bench measures each level: first the floor, then Tether.
func (s *Soak) Bench(ctx context.Context) ([]Level, error) {
	fw, err := startFloorWorker(s.c, 16*s.o.Workers)
	if err != nil {
		return nil, fmt.Errorf("start the floor's worker: %w", err)
	}
	defer fw.Stop()
	if s.o.Trace && s.o.Dev != nil {
		s.spans = s.o.Spans
	}
	if s.o.Trace && s.o.Dev == nil {
		if err := s.startTracing(ctx); err != nil {
			return nil, err
		}
		defer func() {
			if err := s.stopTracing(context.WithoutCancel(ctx)); err != nil {
				s.logf("restarting the workers without tracing: %v", err)
			}
		}()
	}
	var out []Level
	for _, n := range s.o.Levels {
		floor, err := s.floor(ctx, n, 2*s.o.BenchRounds)
		if err != nil {
			return out, err
		}
		tether, err := s.tetherLevel(ctx, n)
		if err != nil {
			return out, err
		}
		l := Level{Runs: n, Tether: tether.Throughput, Floor: floor.Throughput, TetherParts: tether.parts, FloorParts: floor.parts,
			TetherServer: tether.server, FloorServer: floor.server, TetherCPU: tether.cpu, FloorCPU: floor.cpu}
		s.logf("%4d runs at once: tether %.1f visits/s (p50 %s, p99 %s); floor %.1f/s (p50 %s, p99 %s)",
			n, tether.PerSec, ms(tether.P50), ms(tether.P99), floor.PerSec, ms(floor.P50), ms(floor.P99))
		s.logf("%4d runs at once: per Tether visit %s; per floor step %s", n, l.TetherCPU, l.FloorCPU)
		if l.TetherServer != nil {
			s.logf("%4d runs at once: the server per Tether visit: %s", n, l.TetherServer)
			s.logf("%4d runs at once: the server per floor step: %s", n, l.FloorServer)
		}
		out = append(out, l)
	}
	return out, nil
}

// measured is a phase's throughput, where its steps' time went and what
// the server did for them.
type measured struct {
	Throughput
	parts  []visitbench.Part
	server *ServerWork
	cpu    cpuUse
}

func (s *Soak) floor(ctx context.Context, n, steps int) (measured, error) {
	before, err := scrape(ctx, s.o.ServerMetrics)
	if err != nil {
		return measured{}, err
	}
	cpu0 := s.cpuNow()
	started := time.Now()
	handles := make([]client.WorkflowRun, n)
	for i := range handles {
		h, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: fmt.Sprintf("%s-floor-%d-%d", s.prefix, n, i), TaskQueue: floorQueue,
		}, FloorRun, steps)
		if err != nil {
			return measured{}, fmt.Errorf("start a floor workflow: %w", err)
		}
		handles[i] = h
	}
	var lat []time.Duration
	var ids []string
	for _, h := range handles {
		var d []time.Duration
		if err := h.Get(ctx, &d); err != nil {
			return measured{}, fmt.Errorf("floor workflow %s: %w", h.GetID(), err)
		}
		lat = append(lat, d...)
		ids = append(ids, h.GetID())
	}
	m := measured{Throughput: throughput(lat, time.Since(started)), cpu: s.cpuNow().perVisit(cpu0, len(lat))}
	after, err := scrape(ctx, s.o.ServerMetrics)
	if err != nil {
		return m, err
	}
	m.server = work(before, after, len(lat))
	m.parts, err = s.split(ctx, ids, len(lat))
	return m, err
}

// split sums the parts of the runs' histories (split by the workers'
// spans, when traced) and divides them by visits.
func (s *Soak) split(ctx context.Context, ids []string, visits int) ([]visitbench.Part, error) {
	var spans map[string][]visitbench.Span
	if s.spans != nil {
		time.Sleep(time.Second) // the workers' last batches of spans
		want := map[string]bool{}
		for _, id := range ids {
			want[id] = true
		}
		spans = s.spans.Spans(want)
	}
	var all [][]visitbench.Part
	for _, id := range ids {
		events, err := visitbench.History(ctx, s.c, id)
		if err != nil {
			return nil, err
		}
		all = append(all, visitbench.Split(events, spans[id], time.Time{}, time.Time{}))
	}
	return visitbench.Per(all, visits), nil
}

func (s *Soak) tetherLevel(ctx context.Context, n int) (measured, error) {
	g := graphFile("soak-persist", graphData{Rounds: s.o.BenchRounds})
	runs := make([]*run, n)
	before, err := scrape(ctx, s.o.ServerMetrics)
	if err != nil {
		return measured{}, err
	}
	cpu0 := s.cpuNow()
	started := time.Now()
	for i := range runs {
		runs[i] = &run{id: fmt.Sprintf("%s-bench-%d-%d", s.prefix, n, i), kind: "bench", rounds: s.o.BenchRounds}
		if err := s.start(ctx, runs[i], g, nil); err != nil {
			return measured{}, err
		}
	}
	s.wait(ctx, runs)
	elapsed := time.Since(started)
	var lat []time.Duration
	for _, r := range runs {
		if r.err != nil {
			return measured{}, fmt.Errorf("bench run %s: %w", r.id, r.err)
		}
		for _, st := range r.result.Path {
			if st.Status == "ok" && (st.Node == "writer" || st.Node == "judge") {
				lat = append(lat, time.Duration(st.DurationMS)*time.Millisecond)
			}
		}
	}
	if want := n * 2 * s.o.BenchRounds; len(lat) != want {
		return measured{}, fmt.Errorf("bench at %d runs: %d visits in the runs' paths, want %d", n, len(lat), want)
	}
	m := measured{Throughput: throughput(lat, elapsed), cpu: s.cpuNow().perVisit(cpu0, len(lat))}
	after, err := scrape(ctx, s.o.ServerMetrics)
	if err != nil {
		return m, err
	}
	m.server = work(before, after, len(lat))
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.id)
	}
	if m.parts, err = s.split(ctx, ids, len(lat)); err != nil {
		return m, err
	}
	// The bench's runs are not what the soak checks; they go at once.
	for _, r := range runs {
		if out, err := s.tether(ctx, "delete", r.id); err != nil {
			return measured{}, fmt.Errorf("tether delete %s: %w\n%s", r.id, err, out)
		}
	}
	return m, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

// startTracing starts the span receiver and restarts the cluster's
// workers exporting to it.
func (s *Soak) startTracing(ctx context.Context) error {
	rcv, err := visitbench.Receive()
	if err != nil {
		return err
	}
	s.spans = rcv
	s.traceEnv = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL, "OTEL_BSP_SCHEDULE_DELAY=200"}
	s.logf("span receiver on %s; restarting the workers with OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	return s.restartWorkers(ctx)
}

// stopTracing restarts the workers without the receiver, which it then
// stops.
func (s *Soak) stopTracing(ctx context.Context) error {
	s.traceEnv = nil
	err := s.restartWorkers(ctx)
	s.spans.Close()
	return err
}

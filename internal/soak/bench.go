package soak

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
)

// Level is the throughput of one concurrency: Tether's persist runs beside
// the floor's workflows of as many do-nothing activities.
type Level struct {
	Runs   int
	Tether Throughput
	Floor  Throughput
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
		l := Level{Runs: n, Tether: tether, Floor: floor}
		s.logf("%4d runs at once: tether %.1f visits/s (p50 %s, p99 %s); floor %.1f/s (p50 %s, p99 %s)",
			n, tether.PerSec, ms(tether.P50), ms(tether.P99), floor.PerSec, ms(floor.P50), ms(floor.P99))
		out = append(out, l)
	}
	return out, nil
}

func (s *Soak) floor(ctx context.Context, n, steps int) (Throughput, error) {
	started := time.Now()
	handles := make([]client.WorkflowRun, n)
	for i := range handles {
		h, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: fmt.Sprintf("%s-floor-%d-%d", s.prefix, n, i), TaskQueue: floorQueue,
		}, FloorRun, steps)
		if err != nil {
			return Throughput{}, fmt.Errorf("start a floor workflow: %w", err)
		}
		handles[i] = h
	}
	var lat []time.Duration
	for _, h := range handles {
		var d []time.Duration
		if err := h.Get(ctx, &d); err != nil {
			return Throughput{}, fmt.Errorf("floor workflow %s: %w", h.GetID(), err)
		}
		lat = append(lat, d...)
	}
	return throughput(lat, time.Since(started)), nil
}

func (s *Soak) tetherLevel(ctx context.Context, n int) (Throughput, error) {
	g := parse("soak-persist", persistGraph(s.o.BenchRounds, 0))
	runs := make([]*run, n)
	started := time.Now()
	for i := range runs {
		runs[i] = &run{id: fmt.Sprintf("%s-bench-%d-%d", s.prefix, n, i), kind: "bench", rounds: s.o.BenchRounds}
		if err := s.start(ctx, runs[i], g, nil); err != nil {
			return Throughput{}, err
		}
	}
	s.wait(ctx, runs)
	elapsed := time.Since(started)
	var lat []time.Duration
	for _, r := range runs {
		if r.err != nil {
			return Throughput{}, fmt.Errorf("bench run %s: %w", r.id, r.err)
		}
		for _, st := range r.result.Path {
			if st.Status == "ok" && (st.Node == "writer" || st.Node == "judge") {
				lat = append(lat, time.Duration(st.DurationMS)*time.Millisecond)
			}
		}
	}
	if want := n * 2 * s.o.BenchRounds; len(lat) != want {
		return Throughput{}, fmt.Errorf("bench at %d runs: %d visits in the runs' paths, want %d", n, len(lat), want)
	}
	// The bench's runs are not what the soak checks; they go at once.
	for _, r := range runs {
		if out, err := s.tether(ctx, "delete", r.id); err != nil {
			return Throughput{}, fmt.Errorf("tether delete %s: %w\n%s", r.id, err, out)
		}
	}
	return throughput(lat, elapsed), nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

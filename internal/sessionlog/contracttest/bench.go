package contracttest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tether-run/tether/internal/sessionlog"
)

// BenchAppend measures durable append throughput (events/s) through the
// Coordinator: one event per Append, 100 per Append, and 8 goroutines
// appending one event each to the same session (group commit).
func BenchAppend(b *testing.B, open func(b *testing.B) sessionlog.Storage) {
	ctx := context.Background()
	text := strings.Repeat("x", 200)
	run := func(b *testing.B, batch int, parallel bool) {
		c := sessionlog.NewCoordinator(open(b))
		defer c.Close()
		if err := c.Create(ctx, sessionlog.Header{ID: "bench", Backend: "bench"}); err != nil {
			b.Fatal(err)
		}
		events := make([]sessionlog.Event, batch)
		for i := range events {
			events[i] = sessionlog.Message(sessionlog.RoleAssistant, text)
		}
		b.ResetTimer()
		if parallel {
			var n atomic.Int64
			b.SetParallelism(4) // 4 x GOMAXPROCS goroutines
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.Append(ctx, "bench", events...); err != nil {
						b.Error(err)
						return
					}
					n.Add(int64(batch))
				}
			})
		} else {
			for range b.N {
				if err := c.Append(ctx, "bench", events...); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
	}
	b.Run("1-per-append", func(b *testing.B) { run(b, 1, false) })
	b.Run("100-per-append", func(b *testing.B) { run(b, 100, false) })
	b.Run("1-per-append-concurrent", func(b *testing.B) { run(b, 1, true) })
}

// LoadSizeMB is the size of the log BenchLoad reads: 100 MB, 10 MB with
// -short, or SESSIONLOG_BENCH_MB.
func LoadSizeMB() int {
	if v, err := strconv.Atoi(os.Getenv("SESSIONLOG_BENCH_MB")); err == nil && v > 0 {
		return v
	}
	if testing.Short() {
		return 10
	}
	return 100
}

// BenchLoad writes a log of LoadSizeMB() megabytes of 1 KB messages once,
// then measures Load of it by a fresh Coordinator (a process resuming).
func BenchLoad(b *testing.B, open func(b *testing.B) sessionlog.Storage) {
	ctx := context.Background()
	mb := LoadSizeMB()
	st := open(b)
	c := sessionlog.NewCoordinator(st)
	if err := c.Create(ctx, sessionlog.Header{ID: "big", Backend: "bench"}); err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("y", 1000)
	const perBatch = 5000
	batch := make([]sessionlog.Event, perBatch)
	for i := range batch {
		batch[i] = sessionlog.Message(sessionlog.RoleAssistant, text)
	}
	line, _ := sessionlog.EncodeEvent(sessionlog.Event{Seq: 100000, Kind: sessionlog.KindMessage, Role: sessionlog.RoleAssistant, Text: text})
	total := mb << 20 / (len(line) + 1)
	for n := 0; n < total; n += perBatch {
		if err := c.Append(ctx, "big", batch[:min(perBatch, total-n)]...); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
		b.SetBytes(int64(total) * int64(len(line)+1))
		for range b.N {
			c := sessionlog.NewCoordinator(open(b))
			log, err := c.Load(ctx, "big")
			if err != nil {
				b.Fatal(err)
			}
			if len(log.Events) != total {
				b.Fatalf("loaded %d events, want %d", len(log.Events), total)
			}
			c.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/load")
		b.ReportMetric(float64(total), "events")
	})

	// The same log with one turn more, read by its tail as a resume does.
	c = sessionlog.NewCoordinator(open(b))
	if err := c.Append(ctx, "big", sessionlog.TurnStart(), sessionlog.Message(sessionlog.RoleUser, text),
		sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")); err != nil {
		b.Fatal(err)
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("tail-of-%dMB", mb), func(b *testing.B) {
		for range b.N {
			c := sessionlog.NewCoordinator(open(b))
			log, err := c.LoadTail(ctx, "big")
			if err != nil {
				b.Fatal(err)
			}
			if len(log.Events) > total/2 {
				b.Fatalf("the tail holds %d of %d events", len(log.Events), total+3)
			}
			c.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/load")
	})
}

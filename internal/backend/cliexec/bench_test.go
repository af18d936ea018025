package cliexec

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/hostport"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
)

// BenchmarkConfinedStart measures what confinement adds to starting a
// process: each iteration starts an agent's model relay and runs /bin/true
// once unconfined (the relay on the loopback) and once under the full
// sandbox (the relay's socket bound in and a loopback listener for it, and
// an allowlist, so the egress proxy and a relay are set up too, as for an
// agent with a `network:` of its own), interleaved so that the machine's
// load falls on both alike. It reports the medians and their difference.
func BenchmarkConfinedStart(b *testing.B) {
	sb := sandboxtest.New(b)
	dir, home, tmp := b.TempDir(), b.TempDir(), b.TempDir()
	conf := Confinement{Home: home, TempDir: tmp}
	f, _ := catalogue.Lookup("claude_code")
	ctx := sandbox.WithVisit(context.Background(), &sandbox.Visit{Model: true, Allow: hostport.MustParsePatterns("api.github.com:443")})
	run := func(s *sandbox.Sandbox) time.Duration {
		start := time.Now()
		c := CLI{Options: Options{BaseURL: "https://api.anthropic.com", APIKey: "k", Sandbox: s}, Backend: f.Name, Facts: f}
		route, err := c.route(ctx, agent.Request{}, func(agent.Usage) {})
		if err != nil {
			b.Fatal(err)
		}
		_, err = Run(ctx, Spec{Backend: "bench", Bin: "/bin/true", Dir: dir, Sandbox: s, Confinement: conf, Model: route.in})
		route.close()
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	run(sb) // warm the page cache for bwrap and the helper
	var bare, confined []time.Duration
	b.ResetTimer()
	for range b.N {
		bare = append(bare, run(nil))
		confined = append(confined, run(sb))
	}
	b.StopTimer()
	mb, mc := median(bare), median(confined)
	b.ReportMetric(ms(mb), "bare-ms")
	b.ReportMetric(ms(mc), "confined-ms")
	b.ReportMetric(ms(mc-mb), "added-ms")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/testenv"
)

// BenchmarkOneVisitVsBareCLI compares a whole `tether run --follow` of a
// one-visit claude_code persist graph, on a confined worker, with the same
// turn of `claude -p` run bare, against the same fake model; each
// iteration runs one of each, in turn, so that the machine's load falls on
// both alike. It reports the medians and their ratio (`make bench` runs it
// with -benchtime 8x).
func BenchmarkOneVisitVsBareCLI(b *testing.B) {
	bin := testenv.CLIBin(b)
	fake := fakemodel.Start(b)
	store := "file://" + b.TempDir()
	h := newHarness(b, store)
	h.backends = func(testing.TB) backend.Config {
		return backend.Config{
			CLIBin: bin, AnthropicBaseURL: fake.URL(),
			Models:  map[string]string{backend.ClaudeCode: "claude-fake-1"},
			APIKeys: map[string]string{backend.ClaudeCode: "k"},
			TempDir: b.TempDir(),
		}
	}
	// TETHER_BENCH_UNCONFINED=1 measures the worker without its
	// sandbox, to tell the sandbox's share of the difference.
	if os.Getenv("TETHER_BENCH_UNCONFINED") == "1" {
		h.sandbox = nil
	}
	h.startWorker()
	b.Setenv("TEMPORAL_ADDRESS", h.srv.Address)
	b.Setenv("TETHER_BLOB_URL", store)
	file := filepath.Join(b.TempDir(), "one.yaml")
	if err := os.WriteFile(file, []byte(`
name: one
start: w
nodes:
  - {id: w, kind: agent, backend: claude_code, session: persist, prompt: hello}
  - {id: done, kind: end}
edges:
  - {from: w, to: done}
`), 0o644); err != nil {
		b.Fatal(err)
	}
	bare := func() time.Duration {
		home := b.TempDir()
		cmd := exec.Command(filepath.Join(bin, "claude"), "-p", "--output-format", "json", "--model", "claude-fake-1")
		cmd.Stdin = strings.NewReader("hello")
		cmd.Dir = b.TempDir()
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
			"ANTHROPIC_BASE_URL=" + fake.URL(), "ANTHROPIC_API_KEY=k", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "IS_SANDBOX=1"}
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "turn 1: hello") {
			b.Fatalf("bare claude: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	run := func(i int) time.Duration {
		var out strings.Builder
		start := time.Now()
		if code := cli.Main([]string{"run", file, "--id", fmt.Sprintf("one-%d-%d", time.Now().UnixNano(), i), "--follow"}, &out, &out); code != cli.ExitOK {
			b.Fatalf("tether run: exit %d\n%s", code, out.String())
		}
		return time.Since(start)
	}
	// One of each first, to warm the CLI's files and the worker.
	bare()
	run(-1)
	var bares, runs []time.Duration
	b.ResetTimer()
	for i := range b.N {
		bares = append(bares, bare())
		runs = append(runs, run(i))
	}
	b.StopTimer()
	mb, mr := medianOf(bares), medianOf(runs)
	b.ReportMetric(float64(mb.Milliseconds()), "bare-ms")
	b.ReportMetric(float64(mr.Milliseconds()), "tether-ms")
	b.ReportMetric(float64(mr)/float64(mb), "ratio")
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

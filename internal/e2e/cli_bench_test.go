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
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/testenv"
)

// BenchmarkOneVisitVsBareCLI compares a whole `tether run --follow` of a
// one-visit claude_code persist graph with the same turn of `claude -p`
// run bare, against the same fake model, on a confined worker and on an
// unconfined one (each with a dev server of its own); each iteration runs
// one of the three after the other, so that the machine's load falls on
// all alike. It reports the medians and the ratios to the bare run (`make
// bench` runs it with -benchtime 8x).
func BenchmarkOneVisitVsBareCLI(b *testing.B) {
	bin := testenv.CLIBin(b)
	fake := fakemodel.Start(b)
	worker := func(confined bool) (addr, store string) {
		store = "file://" + b.TempDir()
		h := newHarness(b, store)
		if !confined {
			h.sandbox = nil
		}
		h.backends = func(testing.TB) backend.Config {
			return backend.Config{
				CLIBin: bin, Vars: map[string]map[string]string{"claude_code": clitest.FakeVars(fake)["claude_code"]},
				TempDir: b.TempDir(),
			}
		}
		h.startWorker()
		return h.srv.Address, store
	}
	confinedAddr, confinedStore := worker(true)
	openAddr, openStore := worker(false)
	file := filepath.Join(b.TempDir(), "one.yaml")
	if err := os.WriteFile(file, []byte(graphYAML(b, "one")), 0o644); err != nil {
		b.Fatal(err)
	}
	bare := func() time.Duration {
		home := b.TempDir()
		cmd := exec.Command(filepath.Join(bin, "claude"), "-p", "--output-format", "json", "--model", "claude-fake-1")
		cmd.Stdin = strings.NewReader("hello")
		cmd.Dir = b.TempDir()
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
			"ANTHROPIC_BASE_URL=" + fake.URL(), "ANTHROPIC_API_KEY=" + fake.Key(), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "IS_SANDBOX=1"}
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "turn 1: hello") {
			b.Fatalf("bare claude: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	run := func(addr, store string, i int) time.Duration {
		b.Setenv("TEMPORAL_ADDRESS", addr)
		b.Setenv("TETHER_BLOB_URL", store)
		var out strings.Builder
		start := time.Now()
		if code := cli.Main([]string{"run", file, "--id", fmt.Sprintf("one-%d-%d", time.Now().UnixNano(), i), "--follow"}, &out, &out); code != cli.ExitOK {
			b.Fatalf("tether run: exit %d\n%s", code, out.String())
		}
		return time.Since(start)
	}
	// One of each first, to warm the CLI's files and the workers.
	bare()
	run(confinedAddr, confinedStore, -1)
	run(openAddr, openStore, -1)
	var bares, confined, open []time.Duration
	b.ResetTimer()
	for i := range b.N {
		bares = append(bares, bare())
		confined = append(confined, run(confinedAddr, confinedStore, i))
		open = append(open, run(openAddr, openStore, i))
	}
	b.StopTimer()
	mb, mc, mo := medianOf(bares), medianOf(confined), medianOf(open)
	b.ReportMetric(float64(mb.Milliseconds()), "bare-ms")
	b.ReportMetric(float64(mc.Milliseconds()), "confined-ms")
	b.ReportMetric(float64(mo.Milliseconds()), "unconfined-ms")
	b.ReportMetric(float64(mc)/float64(mb), "confined-ratio")
	b.ReportMetric(float64(mo)/float64(mb), "unconfined-ratio")
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

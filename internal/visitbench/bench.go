// Package visitbench measures, from outside and with the real programs,
// what one visit of a Tether run costs beside the agent's CLI run bare:
// `tether run --follow` of a one-visit claude_code persist graph against
// `claude -p` with the same prompt, both against the fake model, in
// interleaved rounds so that the machine's load falls on all alike. It
// splits each run's wall time into its parts (Split) from the run's
// history, the worker's spans and the CLI's own start and exit, and can
// set two builds side by side (each with its own dev server and worker),
// so that a change is measured against the build before it under the same
// load. cmd/visitbench is the program (`make bench-visit`).
package visitbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/fakemodel"
)

// Options say what to measure.
type Options struct {
	// Roots are the repositories of the builds to compare, each with bin/
	// built (make build); the first is the build under test.
	Roots []string
	// Server is "devserver" (each build's scripts/devserver.sh: `make
	// run`'s SQLite dev server) or "cluster" (the one build's runs on the
	// cluster scripts/cluster.sh runs, its workers restarted with the
	// bench's environment and restarted as they were at the end).
	Server     string
	ClusterDir string
	Workers    int
	// Rounds is how many interleaved rounds time the whole run (workers
	// without tracing); SplitRounds how many more, with tracing on, split
	// it into parts.
	Rounds, SplitRounds int
	// CLIs is the directory holding the agent CLIs (scripts/tools.sh clis).
	CLIs string
	// Unconfined runs the workers with TETHER_SANDBOX=off.
	Unconfined bool
	// NoAsk adds a side: the first build again, its node set to
	// ask_user: false (no ask_user MCP server starts).
	NoAsk bool
	// Histories, when set, is a directory to write the last split run's
	// history of each build to (JSON, as `temporal workflow show
	// --output json` writes it).
	Histories string
	Out       io.Writer
}

// graphYAML is the measured graph: one claude_code persist visit.
const graphYAML = `
name: one
start: w
nodes:
  - {id: w, kind: agent, backend: claude_code, session: persist, prompt: hello}
  - {id: done, kind: end}
edges:
  - {from: w, to: done}
`

// noAskYAML is the same graph whose node may not ask the user.
var noAskYAML = strings.Replace(graphYAML, "prompt: hello}", "prompt: hello, ask_user: false}", 1)

// NoAskLabel marks the side Options.NoAsk adds in the report.
const NoAskLabel = " (ask_user: false)"

// Result is what a bench measured.
type Result struct {
	Load0, Load1 string
	Bare         []time.Duration
	SplitBare    []time.Duration
	// BareCPU is the bare CLI's processor time, median of the rounds.
	BareCPU []time.Duration
	Sides   []SideResult
}

// SideResult is one build's figures.
type SideResult struct {
	Root string
	// Wall are the whole runs' times (untraced rounds); Splits the traced
	// rounds' runs, split; Events the history length of each run.
	Wall   []time.Duration
	Splits [][]Part
	Events []int
	// CPU is what one run cost each process, on average over the timed
	// rounds.
	CPU CPU
}

// Run measures.
func Run(ctx context.Context, o Options) (*Result, error) {
	if len(o.Roots) == 0 {
		return nil, errors.New("visitbench: no build to measure")
	}
	if o.Server == "cluster" && (len(o.Roots) > 1 || o.NoAsk) {
		return nil, errors.New("visitbench: a cluster runs one build's workers; compare builds (and -no-ask) on dev servers")
	}
	scratch, err := os.MkdirTemp("", "visitbench-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	fake := fakemodel.New()
	defer fake.Close()
	rcv, err := Receive()
	if err != nil {
		return nil, err
	}
	defer rcv.Close()
	graphFile, noAskFile := filepath.Join(scratch, "one.yaml"), filepath.Join(scratch, "one-no-ask.yaml")
	if err := os.WriteFile(graphFile, []byte(graphYAML), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(noAskFile, []byte(noAskYAML), 0o644); err != nil {
		return nil, err
	}
	res := &Result{Load0: loadAvg()}
	var sides []*side
	defer func() {
		for _, s := range sides {
			s.close(context.Background())
		}
	}()
	model := clitest.FakeVars(fake)["claude_code"]
	workerEnv := map[string]string{"TETHER_CLI_BIN": o.CLIs}
	for k, v := range model {
		workerEnv[k] = v
	}
	if o.Unconfined {
		workerEnv["TETHER_SANDBOX"] = "off"
	}
	traced := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_BSP_SCHEDULE_DELAY": "200"}
	for k, v := range workerEnv {
		traced[k] = v
	}
	roots, graphs := o.Roots, make([]string, len(o.Roots))
	if o.NoAsk {
		roots = append(slices.Clone(roots), roots[0])
		graphs = append(graphs, noAskFile)
	}
	for i, root := range roots {
		s := &side{name: string(rune('a' + i)), root: root, dir: filepath.Join(scratch, string(rune('a'+i))), graph: cmp.Or(graphs[i], graphFile)}
		sides = append(sides, s)
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return nil, err
		}
		switch o.Server {
		case "cluster":
			err = s.useCluster(ctx, o.ClusterDir, o.Workers)
		default:
			err = s.startDevServer(ctx)
		}
		if err != nil {
			return nil, err
		}
		label := root
		if s.graph == noAskFile {
			label += NoAskLabel
		}
		res.Sides = append(res.Sides, SideResult{Root: label})
	}
	bare := func() (time.Duration, time.Duration, error) { return bareCLI(ctx, o.CLIs, model, scratch) }
	// phase runs rounds interleaved: the bare CLI, then each build, the
	// builds' order turned each round.
	phase := func(rounds int, env map[string]string, split bool) error {
		for _, s := range sides {
			if err := s.startWorker(ctx, env); err != nil {
				return err
			}
		}
		// A first run of each warms the CLI's files and the worker.
		if _, _, err := bare(); err != nil {
			return err
		}
		for _, s := range sides {
			if _, _, err := tetherRun(ctx, s, "warm"); err != nil {
				return fmt.Errorf("%s (warm-up): %w", s.root, err)
			}
		}
		cpu0 := make([]CPU, len(sides))
		cli := make([]time.Duration, len(sides))
		for i, s := range sides {
			cpu0[i] = s.cpu()
		}
		type done struct {
			side        int
			id          string
			start, exit time.Time
		}
		var runs []done
		for r := range rounds {
			d, c, err := bare()
			if err != nil {
				return err
			}
			if split {
				res.SplitBare = append(res.SplitBare, d)
			} else {
				res.Bare = append(res.Bare, d)
				res.BareCPU = append(res.BareCPU, c)
			}
			for k := range sides {
				i := (k + r) % len(sides)
				start := time.Now()
				id, c, err := tetherRun(ctx, sides[i], fmt.Sprintf("r%d", r))
				if err != nil {
					return fmt.Errorf("%s: %w", sides[i].root, err)
				}
				runs = append(runs, done{i, id, start, time.Now()})
				cli[i] += c
			}
		}
		if !split {
			for i, s := range sides {
				c := s.cpu().sub(cpu0[i])
				c.CLI = cli[i]
				res.Sides[i].CPU = c.div(rounds)
			}
		}
		for _, s := range sides {
			s.stopWorker() // its last spans go out
		}
		ids := map[string]bool{}
		for _, r := range runs {
			ids[r.id] = true
		}
		time.Sleep(time.Second)
		spans := rcv.Spans(ids)
		for _, r := range runs {
			sr := &res.Sides[r.side]
			if !split {
				sr.Wall = append(sr.Wall, r.exit.Sub(r.start))
				continue
			}
			events, err := History(ctx, sides[r.side].c, r.id)
			if err != nil {
				return err
			}
			sr.Events = append(sr.Events, len(events))
			if o.Histories != "" {
				b, err := protojson.Marshal(&historypb.History{Events: events})
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(o.Histories, fmt.Sprintf("%s.json", string(rune('a'+r.side)))), b, 0o644); err != nil {
					return err
				}
			}
			sr.Splits = append(sr.Splits, Split(events, spans[r.id], r.start, r.exit))
		}
		return nil
	}
	if err := phase(o.Rounds, workerEnv, false); err != nil {
		return res, err
	}
	if o.SplitRounds > 0 {
		if err := phase(o.SplitRounds, traced, true); err != nil {
			return res, err
		}
	}
	res.Load1 = loadAvg()
	return res, nil
}

// bareCLI runs the prompt through `claude -p` alone, in a home of its own.
func bareCLI(ctx context.Context, clis string, model map[string]string, scratch string) (wall, cpu time.Duration, err error) {
	home, err := os.MkdirTemp(scratch, "bare-*")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(home)
	facts, _ := catalogue.Lookup("claude_code")
	role := func(r agent.VarRole) string { v, _ := facts.Var(r); return model[v.Name] }
	cmd := exec.CommandContext(ctx, filepath.Join(clis, "claude"), "-p", "--output-format", "json", "--model", role(agent.VarModel))
	cmd.Stdin = strings.NewReader("hello")
	cmd.Dir = home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + role(agent.VarBaseURL), "ANTHROPIC_API_KEY=" + role(agent.VarAPIKey), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "IS_SANDBOX=1"}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil || !strings.Contains(string(out), "turn 1: hello") {
		return 0, 0, fmt.Errorf("bare claude: %v\n%s", err, out)
	}
	return d, rusageCPU(cmd), nil
}

// tetherRun runs `tether run --follow` of s's graph on s, as a user does,
// and returns the run's id once the command has exited.
func tetherRun(ctx context.Context, s *side, tag string) (string, time.Duration, error) {
	id := fmt.Sprintf("one-%s-%s-%d", s.name, tag, time.Now().UnixNano())
	home := filepath.Join(s.dir, "cli")
	cmd := exec.CommandContext(ctx, filepath.Join(s.root, "bin", "tether"), "run", s.graph, "--id", id, "--follow")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TETHER_HOME=" + home}
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "completed at done") {
		return id, 0, fmt.Errorf("tether run %s: %v\n%s", id, err, out)
	}
	return id, rusageCPU(cmd), nil
}

// History reads a closed run's whole history, for Split.
func History(ctx context.Context, c client.Client, id string) ([]*historypb.HistoryEvent, error) {
	var out []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		out = append(out, ev)
	}
	return out, nil
}

// loadAvg is the machine's load average, as /proc/loadavg has it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

var quietLogger = tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// The console's speed, measured against the real `tether console`
// process, a dev server and a file store (make bench; docs/performance.md).
// Each benchmark sets up once, on its run with b.N >= 2 (the first call
// has b.N = 1), then fetches its page b.N times and reports the time to
// the first byte of the response (the console writes a page once it is
// whole, so that is the time to build it): of the first fetch (cold: the
// console's caches are empty) and the median and slowest of the rest.

// fetch GETs url and returns the time to its first byte and its body.
func fetch(b *testing.B, url string) (time.Duration, string) {
	b.Helper()
	var first time.Time
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(b, err)
	req = req.WithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotFirstResponseByte: func() { first = time.Now() },
	}))
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode, "%s: %s", url, body)
	return first.Sub(start), string(body)
}

// timePage fetches url b.N times and reports its times to first byte
// under name: name-cold-ms, name-median-ms, name-max-ms.
func timePage(b *testing.B, name, url string, check func(body string)) {
	b.Helper()
	var times []time.Duration
	for i := 0; i < b.N; i++ {
		d, body := fetch(b, url)
		if i == 0 {
			check(body)
		}
		times = append(times, d)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(times[0]), name+"-cold-ms")
	rest := slices.Clone(times[1:])
	slices.Sort(rest)
	if len(rest) > 0 {
		b.ReportMetric(ms(rest[len(rest)/2]), name+"-median-ms")
		b.ReportMetric(ms(rest[len(rest)-1]), name+"-max-ms")
	}
}

// BenchmarkConsoleRunsPage: the runs page of a namespace holding 1,000
// runs, 100 of them waiting for a person.
func BenchmarkConsoleRunsPage(b *testing.B) {
	if b.N < 2 {
		return
	}
	h := newHarness(b, "")
	h.startWorker()
	parse := func(src string) *graph.Graph {
		g, err := graph.Parse([]byte(src), "bench.yaml")
		require.NoError(b, err)
		return g
	}
	done := parse(`{name: quick, start: a, nodes: [{id: a, kind: agent, backend: scripted, prompt: go, script: ["ok"]}, {id: end, kind: end}], edges: [{from: a, to: end}]}`)
	ask := parse(`{name: asks, start: q, nodes: [{id: q, kind: human, question: "Ship it?"}, {id: end, kind: end}], edges: [{from: q, to: end}]}`)
	const runs, waiting = 1000, 100
	var g errgroup.Group
	g.SetLimit(16)
	for i := 0; i < runs; i++ {
		g.Go(func() error {
			gr, id := done, fmt.Sprintf("bench-done-%04d", i)
			if i < waiting {
				gr, id = ask, fmt.Sprintf("bench-ask-%04d", i)
			}
			// A dev server just started may not know its namespace for a
			// moment on a loaded machine: the start is tried again.
			for deadline := time.Now().Add(time.Minute); ; {
				_, err := h.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
					runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: gr, Options: testRunOptions})
				var nf *serviceerror.NamespaceNotFound
				if !errors.As(err, &nf) || time.Now().After(deadline) {
					return err
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
	require.NoError(b, g.Wait())
	count := func(q string) int64 {
		resp, err := h.c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: q})
		require.NoError(b, err)
		return resp.GetCount()
	}
	deadline := time.Now().Add(30 * time.Minute)
	for count(`TetherStatus = "completed"`) < runs-waiting || count(`TetherStatus = "waiting"`) < waiting {
		require.True(b, time.Now().Before(deadline), "the runs did not settle")
		time.Sleep(2 * time.Second)
	}
	c := startConsole(b, h, nil)
	b.ResetTimer()
	timePage(b, "runs", c.URL+"/runs", func(body string) {
		require.Contains(b, body, "1000 runs")
		require.Contains(b, body, "Waiting for a person")
	})
}

// BenchmarkConsoleLongRun: the page of a run of 10,000 visits (a persist
// loop on the scripted agent; TETHER_BENCH_VISITS sets another length),
// its timeline's first page and one deep in its history, and the page of
// a visit half way.
func BenchmarkConsoleLongRun(b *testing.B) {
	if b.N < 2 {
		return
	}
	visits := 10000
	if v, err := strconv.Atoi(os.Getenv("TETHER_BENCH_VISITS")); err == nil && v > 0 {
		visits = v
	}
	h := newHarness(b, "")
	h.startWorker()
	g := longLoop(b, visits)
	id := "bench-long"
	run, err := h.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
		runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g})
	require.NoError(b, err)
	var res runapi.GraphRunResult
	// A long poll for the result can time out on a loaded machine; only
	// the run's own failure ends the wait.
	for {
		err := run.Get(context.Background(), &res)
		var wee *temporal.WorkflowExecutionError
		if err == nil || errors.As(err, &wee) {
			require.NoError(b, err)
			break
		}
		b.Logf("waiting for the run's result: %v", err)
		time.Sleep(time.Second)
	}
	require.Equal(b, visits+1, res.Visits)

	c := startConsole(b, h, nil)
	deep := visits / 50 * 3 / 4 // a page three quarters back
	b.ResetTimer()
	timePage(b, "run", c.URL+"/runs/"+id, func(body string) {
		require.Contains(b, body, fmt.Sprintf("of %d, newest first", visits+1))
	})
	timePage(b, "timeline-deep", fmt.Sprintf("%s/runs/%s?page=%d", c.URL, id, deep), func(body string) {
		require.Contains(b, body, fmt.Sprintf("page %d of", deep))
		require.NotContains(b, body, "no longer hold")
	})
	timePage(b, "visit-half", fmt.Sprintf("%s/runs/%s/visits/w/%d", c.URL, id, visits/2), func(body string) {
		require.Contains(b, body, fmt.Sprintf("ok %d", visits/2))
	})
}

// BenchmarkConsoleTranscript: the page of a visit whose Claude Code
// session is 50 MB (TETHER_BENCH_SESSION_MB sets another size): the first
// page of its conversation, and the console process's peak memory.
func BenchmarkConsoleTranscript(b *testing.B) {
	if b.N < 2 {
		return
	}
	mb := 50
	if v, err := strconv.Atoi(os.Getenv("TETHER_BENCH_SESSION_MB")); err == nil && v > 0 {
		mb = v
	}
	h := newHarness(b, "")
	id, sessionID := "bench-transcript", "0b3c5e6a-5d1f-4c27-9e55-3f9d2a1b7c80"
	slot, size := bigClaudeSession(b, h.blobs, id, sessionID, mb<<20)
	g, err := graph.Parse([]byte(`{name: talk, start: w, nodes: [{id: w, kind: agent, backend: claude_code, session: persist, prompt: go}, {id: end, kind: end}], edges: [{from: w, to: end}]}`), "talk.yaml")
	require.NoError(b, err)
	cp := &runstore.Checkpoint{
		RunID: id, Seq: 1, Status: runstore.StatusCompleted,
		Visits: map[string]int{"w": 1, "end": 1}, Outputs: map[string]map[string]any{"w": {"text": "done"}},
		NodeSessions: map[string]runstore.NodeSessionSlot{"w": slot},
		Path:         []runstore.Step{{Node: "w", Visit: 1, Status: "ok"}, {Node: "end", Visit: 1, Status: "ok"}}, PathTotal: 2,
	}
	require.NoError(b, runapi.SetGraph(cp, g))
	require.NoError(b, h.runs.Save(context.Background(), id, cp))
	c := startConsole(b, h, nil)
	b.ResetTimer()
	timePage(b, "transcript", c.URL+"/runs/"+id+"/visits/w/1", func(body string) {
		require.Contains(b, body, "user · turn 1")
		require.Contains(b, body, "Later »", "the conversation is paged")
	})
	b.StopTimer()
	b.ReportMetric(float64(size)/1e6, "session-MB")
	b.ReportMetric(float64(c.peakRSS(b))/1e6, "console-peak-rss-MB")
}

// bigClaudeSession writes a Claude Code session of about size bytes
// (turns of a prompt, a tool call and an 8 KB tool result each), packs it
// as the claude_code packer does, stores it as run's session blob and
// returns the slot naming it and the session's size.
func bigClaudeSession(b *testing.B, store blob.Store, run, sessionID string, size int) (runstore.NodeSessionSlot, int64) {
	b.Helper()
	env := agent.Env{StateRoot: b.TempDir(), Workdir: b.TempDir()}
	file := filepath.Join(env.StateRoot, "session.jsonl")
	f, err := os.Create(file)
	require.NoError(b, err)
	enc := json.NewEncoder(f)
	result := strings.Repeat("ok   github.com/example/stats  0.012s  coverage: 87.5% of statements\n", 110) // ~8 KB
	written := int64(0)
	for turn := 1; written < int64(size); turn++ {
		for _, line := range []any{
			map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": fmt.Sprintf("Turn %d: run the tests again and fix what fails.", turn)}},
			map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": "I will run the tests."},
				map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", turn), "name": "Bash", "input": map[string]any{"command": "go test ./..."}},
			}}},
			map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_%d", turn), "content": result},
			}}},
		} {
			require.NoError(b, enc.Encode(line))
		}
		fi, err := f.Stat()
		require.NoError(b, err)
		written = fi.Size()
	}
	require.NoError(b, f.Close())
	places := packer.Files(func(agent.Env, string) ([]packer.Place, error) {
		return []packer.Place{{Name: "project/" + sessionID + ".jsonl", Path: "session.jsonl", Primary: true}}, nil
	})
	data, err := packer.New("claude_code", env, packer.DefaultLimits(), places).PackSession(context.Background(), sessionID)
	require.NoError(b, err)
	key := runstore.SessionKey(run, "w", "01J00000000000000000000BEN")
	require.NoError(b, blob.PutBytes(context.Background(), store, key, data))
	return runstore.NodeSessionSlot{Backend: "claude_code", SessionID: sessionID, StateRef: key, Digest: packer.Digest(data), Size: int64(len(data))}, written
}

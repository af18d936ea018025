package runstore

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"bytes"
	"compress/gzip"
	"encoding/json"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
)

// longRunCheckpoint is a checkpoint late in a persist loop of two agents
// and a tool: a full 200-step path with real timings, a few kilobytes of
// graph and outputs, session slots and a workspace. Its JSON is the
// 27–30 KB a 10,000-visit run stores per visit.
func longRunCheckpoint() *Checkpoint {
	const run = "loop-01JD0000000000000000000000"
	r := rand.New(rand.NewPCG(1, 2))
	hex := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte("0123456789abcdef"[r.IntN(16)])
		}
		return b.String()
	}
	ulid := func() string { return "01JD" + strings.ToUpper(hex(22)) }
	prompt := strings.Repeat("Improve the draft in draft.md against the reviewer's notes; keep every section, cite sources, and stop when the judge approves. ", 6)
	cp := &Checkpoint{
		RunID:  run,
		Seq:    9801,
		Status: StatusRunning,
		Graph: graphJSON(graph.Graph{Name: "persist-loop", Start: "writer", Nodes: []graph.Node{
			{ID: "writer", Kind: graph.KindAgent, Backend: "claude_code", Session: graph.SessionPersist, Prompt: prompt, Tools: []string{"Read", "Edit", "Write", "Bash"}},
			{ID: "judge", Kind: graph.KindAgent, Backend: "codex", Session: graph.SessionPersist, Prompt: strings.Repeat("Judge the draft: answer approve or revise with notes. ", 8)},
			{ID: "test", Kind: graph.KindTool, Run: []string{"make", "check"}},
			{ID: "done", Kind: graph.KindEnd},
		}}),
		Inputs: map[string]any{"topic": "durable agent workflows", "max_rounds": 5000},
		Cursor: []Cursor{{Node: "judge", Input: map[string]any{"draft": strings.Repeat("draft text ", 40)}, From: "writer"}},
		Outputs: map[string]map[string]any{
			"writer": {"text": strings.Repeat("Revised section 3 and the summary. ", 20), "_session_id": ulid(), "_backend": "claude_code"},
			"judge":  {"verdict": "revise", "notes": strings.Repeat("Tighten the argument in section 2. ", 15)},
			"test":   {"stdout": "ok  \tall checks passed\n", "exit_code": 0},
		},
		Visits:           map[string]int{"writer": 3267, "judge": 3267, "test": 3267},
		RetainedSessions: map[string][]string{},
		PathTotal:        9801,
		Transitions:      []Transition{{From: "writer", To: "judge"}, {From: "judge", To: "test"}, {From: "test", To: "writer"}},
		Usage: map[string]agent.Usage{
			"writer": {InputTokens: 81234567, OutputTokens: 2345678, CacheReadTokens: 70123456, CostUSD: 812.34, CostKnown: true},
			"judge":  {InputTokens: 41234567, OutputTokens: 345678},
		},
		Workspace: &WorkspaceState{Commit: hex(40), Base: hex(40), Files: 1841, Bytes: 23456789, Commits: 3267},
	}
	cp.NodeSessions = map[string]NodeSessionSlot{}
	for _, n := range []string{"writer", "judge"} {
		cp.NodeSessions[n] = NodeSessionSlot{Backend: "claude_code", SessionID: ulid(), Fingerprint: hex(16), StateRef: SessionKey(run, n, ulid()), Digest: hex(64)}
		for range 3 {
			cp.RetainedSessions[n] = append(cp.RetainedSessions[n], SessionKey(run, n, ulid()))
		}
	}
	for range 8 {
		cp.Workspace.Packs = append(cp.Workspace.Packs, WorkspacePack{Key: WorkspacePackKey(run, hex(64)), Base: hex(40), Tip: hex(40), Size: r.Int64N(1 << 20)})
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	nodes := []string{"writer", "judge", "test"}
	for i := range 200 {
		d := time.Duration(r.Int64N(int64(90*time.Second))) + time.Second
		s := Step{Node: nodes[i%3], Visit: 3201 + i/3, Status: "ok", StartedAt: at.Format(time.RFC3339Nano), DurationMS: d.Milliseconds()}
		if s.Node == "judge" {
			s.Detail = "revise"
		}
		cp.Path = append(cp.Path, s)
		at = at.Add(d + time.Duration(r.Int64N(int64(time.Second))))
	}
	return cp
}

// BenchmarkCheckpointCompression measures what storing a long run's
// checkpoint costs at each candidate gzip level: encoding it (JSON, then
// the member; "member" is the compression alone) and reading it back, with
// the bytes stored. "json" is the store before checkpoints were compressed.
func BenchmarkCheckpointCompression(b *testing.B) {
	cp := longRunCheckpoint()
	for _, lv := range []struct {
		name  string
		json  bool
		level int
	}{{"json", true, 0}, {"fastest", false, gzip.BestSpeed}, {"default", false, gzip.DefaultCompression}} {
		compress := func(plain []byte) []byte {
			if lv.json {
				return plain
			}
			var buf bytes.Buffer
			w, err := gzip.NewWriterLevel(&buf, lv.level)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = w.Write(plain)
			_ = w.Close()
			return buf.Bytes()
		}
		store := func() []byte {
			plain, err := Encode(cp)
			if err != nil {
				b.Fatal(err)
			}
			return compress(plain)
		}
		stored := store()
		plain, _ := Encode(cp)
		if lv.level == checkpointLevel && !lv.json {
			// What Save runs: Compress, with its pooled writer.
			b.Run("Compress", func(b *testing.B) {
				for b.Loop() {
					Compress(plain)
				}
			})
		}
		b.Run("member/"+lv.name, func(b *testing.B) {
			for b.Loop() {
				compress(plain)
			}
		})
		b.Run("save/"+lv.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				store()
			}
			b.ReportMetric(float64(len(stored)), "stored-bytes")
		})
		b.Run("get/"+lv.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				plain, err := Decompress(stored)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Decode(plain); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestLongRunCheckpointIsRealistic(t *testing.T) {
	plain, err := Encode(longRunCheckpoint())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(plain); n < 25<<10 || n > 32<<10 {
		t.Fatalf("the benchmark's checkpoint is %d bytes of JSON, not the 27–30 KB of a long run's", n)
	}
	t.Logf("%d bytes of JSON, %d stored", len(plain), len(Compress(plain)))
}

// graphJSON is g as a checkpoint keeps it.
func graphJSON(g graph.Graph) json.RawMessage {
	b, err := json.Marshal(&g)
	if err != nil {
		panic(err)
	}
	return b
}

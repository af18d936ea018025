package conversation_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/catalogue/transcripts"
	"github.com/tether-run/tether/internal/conversation"
	"github.com/tether-run/tether/internal/packer/archive"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/transcript"
)

// benchSessionMB is the size of the benchmarks' session file
// (TRANSCRIPT_BENCH_MB; 50 by default, as the console's target names).
func benchSessionMB() int {
	if n, err := strconv.Atoi(os.Getenv("TRANSCRIPT_BENCH_MB")); err == nil && n > 0 {
		return n
	}
	return 50
}

// words makes text that compresses about as well as a transcript.
type words struct{ r *rand.Rand }

var vocabulary = strings.Fields(`the a of to and in is that for it on with as was be by this are or from at
	func return err nil if else package import main go test file line string int error ok build run
	src/main.go internal/store/store.go TestMain assert require context ctx value key map slice`)

func (w words) text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(vocabulary[w.r.IntN(len(vocabulary))])
		if w.r.IntN(12) == 0 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// claudeSession is a Claude Code transcript of about mb MB: turns of a
// prompt, a Bash call, its 4 KB output, and a reply.
func claudeSession(mb int) []byte {
	w := words{rand.New(rand.NewPCG(1, 2))}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for turn := 1; buf.Len() < mb<<20; turn++ {
		id := fmt.Sprintf("toolu_%06d", turn)
		_ = enc.Encode(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": w.text(200)}})
		_ = enc.Encode(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{
			map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "go test ./..."}}}}})
		_ = enc.Encode(map[string]any{"type": "user", "message": map[string]any{"content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": w.text(4096)}}}})
		_ = enc.Encode(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{
			map[string]any{"type": "text", "text": w.text(500)}}}})
	}
	return buf.Bytes()
}

// opencodeSession is an opencode export of about mb MB, one JSON
// document: the same turns as messages with parts.
func opencodeSession(mb int) []byte {
	w := words{rand.New(rand.NewPCG(3, 4))}
	var msgs bytes.Buffer
	for turn := 1; msgs.Len() < mb<<20; turn++ {
		if turn > 1 {
			msgs.WriteByte(',')
		}
		u, _ := json.Marshal(map[string]any{"info": map[string]any{"role": "user"}, "parts": []any{map[string]any{"type": "text", "text": w.text(200)}}})
		a, _ := json.Marshal(map[string]any{"info": map[string]any{"role": "assistant"}, "parts": []any{
			map[string]any{"type": "tool", "tool": "bash", "callID": fmt.Sprintf("call_%06d", turn),
				"state": map[string]any{"status": "completed", "input": map[string]any{"command": "go test ./..."}, "output": w.text(4096)}},
			map[string]any{"type": "text", "text": w.text(500)}}})
		msgs.Write(u)
		msgs.WriteByte(',')
		msgs.Write(a)
	}
	return []byte(`{"info":{"id":"ses_bench"},"messages":[` + msgs.String() + "]}\n")
}

// archiveOf is a session archive holding content under name, as the
// backend's packer writes one.
func archiveOf(tb testing.TB, backend, id, name string, content []byte) []byte {
	var buf bytes.Buffer
	require.NoError(tb, archive.AppendPrefix(&buf, archive.Header{Backend: backend, SessionID: id}))
	zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
	require.NoError(tb, err)
	tw := tar.NewWriter(zw)
	require.NoError(tb, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(content)), Mode: 0o600, Format: tar.FormatPAX}))
	_, err = tw.Write(content)
	require.NoError(tb, err)
	require.NoError(tb, tw.Close())
	require.NoError(tb, zw.Close())
	return buf.Bytes()
}

// peakHeap samples the live heap every millisecond until stopped and
// returns the largest value seen.
func peakHeap() (stop func() uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak }
}

// BenchmarkTranscript reads the first page (100 entries) and the last of
// a session of TRANSCRIPT_BENCH_MB (50) MB, stored as one archive, as the
// console does; it reports the page's time (ns/op), the compressed blob's
// size, and the live heap's peak while the page was read.
func BenchmarkTranscript(b *testing.B) {
	mb := benchSessionMB()
	for _, c := range []struct {
		backend, id, name string
		content           func(int) []byte
	}{
		{"claude_code", "0b7e2b8e-6d0f-4c55-9d0a-2a4b7c1e9f00", "project/0b7e2b8e-6d0f-4c55-9d0a-2a4b7c1e9f00.jsonl", claudeSession},
		{"opencode", "ses_bench", "sessions/ses_bench.json", opencodeSession},
	} {
		content := c.content(mb)
		data := archiveOf(b, c.backend, c.id, c.name, content)
		store := blob.NewMem()
		ref := runstore.SessionKey(run, node, "01J00000000000000000000000")
		require.NoError(b, blob.PutBytes(context.Background(), store, ref, data))
		src := conversation.Source{Store: store, RunID: run, Backend: c.backend, SessionID: c.id,
			Parts: []conversation.Part{{Ref: ref, Digest: archive.Digest(data)}}}
		total, err := conversation.Read(context.Background(), transcripts.Reader, src, 1<<30, 1, transcript.Limits{})
		require.NoError(b, err)
		require.Empty(b, total.Entries)
		// Count the entries: one page past the end reads them all.
		all := 0
		for from := 0; ; {
			p, err := conversation.Read(context.Background(), transcripts.Reader, src, from, 500, transcript.Limits{})
			require.NoError(b, err)
			all += len(p.Entries)
			if p.Next == 0 {
				break
			}
			from = p.Next
		}
		content = nil
		for _, page := range []struct {
			name string
			from int
		}{{"first-page", 0}, {"last-page", all - 100}} {
			b.Run(c.backend+"/"+page.name, func(b *testing.B) {
				runtime.GC()
				stop := peakHeap()
				b.ReportAllocs()
				for b.Loop() {
					p, err := conversation.Read(context.Background(), transcripts.Reader, src, page.from, 100, transcript.Limits{})
					require.NoError(b, err)
					require.Len(b, p.Entries, 100)
				}
				b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MB")
				b.ReportMetric(float64(len(data))/(1<<20), "blob-MB")
				b.ReportMetric(float64(all), "entries")
			})
		}
	}
}

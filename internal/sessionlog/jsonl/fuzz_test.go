package jsonl_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

// fuzzPrefix is a valid log that ends inside an open step of an open turn,
// so recovery always has closers to write after whatever follows it.
func fuzzPrefix(tb testing.TB) ([]byte, []sessionlog.Event) {
	h := sessionlog.Header{ID: "fz", Backend: "test", FormatVersion: sessionlog.FormatVersion}
	events := []sessionlog.Event{
		sessionlog.TurnStart(),
		sessionlog.TurnEnd(sessionlog.ReasonCompleted, ""),
		sessionlog.TurnStart(),
		sessionlog.Message(sessionlog.RoleUser, "go"),
		sessionlog.StepStart(),
		sessionlog.ToolCall("t1", "run", map[string]any{"n": 1.0}),
	}
	line, err := sessionlog.EncodeHeader(h)
	if err != nil {
		tb.Fatal(err)
	}
	buf := bytes.NewBuffer(append(line, '\n'))
	for i := range events {
		events[i].Seq = int64(i + 1)
		line, err := sessionlog.EncodeEvent(events[i])
		if err != nil {
			tb.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	// Round-trip the prefix the way Load will see it.
	for i := range events {
		line, _ := sessionlog.EncodeEvent(events[i])
		events[i], _ = sessionlog.DecodeEvent(line)
	}
	return buf.Bytes(), events
}

// fuzzRoot prefers tmpfs: recovery fsyncs, and on a busy disk the fsyncs,
// not the parser, would set the pace of the fuzzer.
func fuzzRoot(f *testing.F) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "jsonl-fuzz-"); err == nil {
			f.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return f.TempDir()
}

// FuzzJSONLRecovery appends arbitrary bytes to a valid log. Load must either
// return a balanced log that begins with the valid prefix (and write its
// repair durably, so a second Load agrees), or fail with ErrCorrupt and
// leave the file untouched. It must never panic.
func FuzzJSONLRecovery(f *testing.F) {
	for _, seed := range []string{
		"",
		"{",
		"\x00\x00\x00",
		"\n",
		"garbage\n",
		"\xff\n",
		`{"seq":7,"kind":"tool/result","tool_use_id":"t1","output":"x"}` + "\n",
		`{"seq":7,"kind":"tool/result","tool_use_id":"t1","output":"x"}`,
		`{"seq":7,"kind":"step/end"}` + "\n" + `{"seq":8,"kind":"turn/end","reason":{"kind":"completed"}}` + "\n",
		`{"seq":7,"kind":"step/end"}` + "\n" + `{"seq":8,"kind":"turn/end","reason":{"kind":"completed"}}` + "\n" + `{"seq":9,"ki`,
		`{"seq":9,"kind":"turn/start"}` + "\n",
		`{"seq":7,"kind":"turn/end","reason":null}` + "\n",
		`{"seq":7,"kind":"message","role":"user","text":"a","input":1e400}` + "\n",
		`null` + "\n",
	} {
		f.Add([]byte(seed))
	}
	prefix, want := fuzzPrefix(f)
	// One store per fuzzing process; each input overwrites the same log.
	root := fuzzRoot(f)
	dir := filepath.Join(root, jsonl.NoCwdBucket)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, "fz.jsonl")
	f.Fuzz(func(t *testing.T, tail []byte) {
		data := append(append([]byte(nil), prefix...), tail...)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}

		c := jsonl.Open(root)
		log, err := c.Load(ctx, "fz")
		c.Close()
		if err != nil {
			if !errors.Is(err, sessionlog.ErrCorrupt) {
				t.Fatalf("Load failed without reporting corruption: %v", err)
			}
			after, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !bytes.Equal(after, data) {
				t.Fatalf("a corrupt log was modified")
			}
			return
		}
		if len(log.Events) < len(want) || !reflect.DeepEqual(log.Events[:len(want)], want) {
			t.Fatalf("the valid prefix was not kept: got %d events", len(log.Events))
		}
		shape, err := sessionlog.ShapeOf(log.Events)
		if err != nil || !shape.Balanced() {
			t.Fatalf("Load returned an unbalanced or invalid log: %+v, %v", shape, err)
		}

		c2 := jsonl.Open(root)
		again, err := c2.Load(ctx, "fz")
		c2.Close()
		if err != nil {
			t.Fatalf("the repaired log does not load: %v", err)
		}
		if !reflect.DeepEqual(again.Events, log.Events) {
			t.Fatalf("the repair was not durable: %d events, then %d", len(log.Events), len(again.Events))
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(after, []byte("\n")) {
			t.Fatalf("the repaired log still ends in a fragment")
		}
	})
}

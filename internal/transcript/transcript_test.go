package transcript_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/catalogue/transcripts"
	"github.com/tether-run/tether/internal/transcript"
)

func TestWriterNumbersTurnsAndKeepsThePage(t *testing.T) {
	w := transcript.NewWriter(2, 2, transcript.Limits{})
	w.User("one")                            // 0
	w.Assistant("")                          // left out
	w.Call("Bash", "c1", `{"command":"ls"}`) // 1
	w.Result("", "c1", "a b", false)         // 2
	w.User("two")                            // 3
	assert.False(t, w.Full())
	w.Assistant("done") // 4: past the page
	assert.True(t, w.Full())
	p := w.Page()
	assert.Equal(t, []transcript.Entry{
		{Kind: transcript.ToolResult, Turn: 1, Tool: "Bash", CallID: "c1", Text: "a b"},
		{Kind: transcript.User, Turn: 2, Text: "two"},
	}, p.Entries)
	assert.Equal(t, 2, p.From)
	assert.Equal(t, 4, p.Next)
}

func TestWriterCutsLongTextOnARuneBoundary(t *testing.T) {
	w := transcript.NewWriter(0, 0, transcript.Limits{MaxTextBytes: 4})
	w.Assistant("aaé bb")
	w.Call("Write", "c", "0123456789")
	e := w.Page().Entries
	assert.Equal(t, "aaé", e[0].Text)
	assert.True(t, e[0].Truncated)
	assert.Equal(t, "0123", e[1].Input)
	assert.True(t, e[1].Truncated)
	assert.Equal(t, 0, w.Page().Next)
}

// A line too long or one the reader cannot parse costs that line, with a
// note; the lines around it are read.
func TestLinesSkipWhatTheyCannotRead(t *testing.T) {
	in := "a\n" + strings.Repeat("x", 100) + "\n\n bad \nb"
	w := transcript.NewWriter(0, 0, transcript.Limits{MaxLineBytes: 50})
	err := transcript.Lines(context.Background(), strings.NewReader(in), w, func(line []byte) error {
		if string(line) == "bad" {
			return assert.AnError
		}
		w.User(string(line))
		return nil
	})
	require.NoError(t, err)
	var got []string
	for _, e := range w.Page().Entries {
		got = append(got, string(e.Kind)+":"+e.Text)
	}
	assert.Equal(t, []string{"user:a", "note:line 2 skipped: it is over 50 bytes", "note:line 4 skipped: " + assert.AnError.Error(), "user:b"}, got)
}

func TestLinesStopWhenThePageIsFull(t *testing.T) {
	var read int
	w := transcript.NewWriter(0, 2, transcript.Limits{})
	err := transcript.Lines(context.Background(), strings.NewReader(strings.Repeat("u\n", 1000)), w, func(line []byte) error {
		read++
		w.User(string(line))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, read, "two for the page, one to know another follows")
	assert.Equal(t, 2, w.Page().Next)
}

// Every backend's reader takes any bytes without panicking, and keeps to
// the page and the text limit.
func FuzzTranscriptReaders(f *testing.F) {
	f.Add([]byte(`{"id":"s","backend":"scripted","format_version":1}` + "\n" + `{"seq":1,"kind":"message","role":"user","text":"hi"}`))
	f.Add([]byte("{\n}\n[1,2]\n\"x\"\nnull\n{\"type\":\"message\"}"))
	f.Add([]byte(`{"info":{"id":"s"},"messages":[{"info":{"role":"user"},"parts":[{"type":"text","text":"hi"}]},` +
		`{"info":{"role":"assistant"},"parts":[{"type":"tool","tool":"bash","callID":"c","state":{"status":"completed","input":{"command":"ls"},"output":"a"}}]}]}`))
	// One line of each CLI's session file, as the CLIs write them.
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]}}` + "\n" +
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"}]}]}}`))
	f.Add([]byte(`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}` + "\n" +
		`{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"c"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"a"}}`))
	f.Add([]byte(`{"type":"session","version":3,"id":"x"}` + "\n" +
		`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{}}]}}` + "\n" +
		`{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"a"}]}}`))
	f.Add([]byte(`{"sessionId":"x","kind":"main"}` + "\n" + `{"id":"1","type":"user","content":[{"text":"hi"}]}` + "\n" +
		`{"id":"2","type":"gemini","content":"","toolCalls":[{"id":"c","name":"ls","args":{}}]}` + "\n" +
		`{"id":"3","type":"user","content":[{"functionResponse":{"id":"c","name":"ls","response":{"output":"a"}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range catalogue.Known() {
			r, ok := transcripts.Reader(name)
			if !ok {
				continue
			}
			lim := transcript.Limits{MaxTextBytes: 32, MaxLineBytes: 4096}
			w := transcript.NewWriter(0, 50, lim)
			_ = r.Read(context.Background(), bytes.NewReader(data), w)
			p := w.Page()
			require.LessOrEqual(t, len(p.Entries), 50, name)
			for _, e := range p.Entries {
				require.LessOrEqual(t, len(e.Text), 32, name)
				require.LessOrEqual(t, len(e.Input), 32, name)
			}
		}
	})
}

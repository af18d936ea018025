package fakemodel

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keys are the keys of the servers the tests started, by URL.
var keys sync.Map

// start starts a server whose key post sends.
func start(t *testing.T) *Server {
	s := Start(t)
	keys.Store(s.URL(), s.Key())
	return s
}

// keyOfURL is the key of the server url is at.
func keyOfURL(url string) string {
	var key string
	keys.Range(func(k, v any) bool {
		if strings.HasPrefix(url, k.(string)+"/") {
			key = v.(string)
			return false
		}
		return true
	})
	return key
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	key := keyOfURL(url)
	// Each API reads its own header.
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("X-Goog-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// sseData returns the data payloads of an SSE body.
func sseData(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(d), &m), d)
		out = append(out, m)
	}
	return out
}

func TestPromptText(t *testing.T) {
	assert.Equal(t, "", promptText("<system-reminder>\nx\n</system-reminder>\n"))
	assert.Equal(t, "hi", promptText("<system-reminder>x</system-reminder>hi"))
	assert.Equal(t, "", promptText("<environment_context>\n <cwd>/x</cwd>\n</environment_context>"))
	assert.Equal(t, "", promptText("# AGENTS.md instructions for /x\n..."))
	assert.Equal(t, "<b>bold</b> text", promptText("<b>bold</b> text"))
}

func TestAnthropicMemoryAndToolCall(t *testing.T) {
	s := start(t)
	_, body := post(t, s.URL()+"/v1/messages", `{"model":"m","messages":[
		{"role":"user","content":[{"type":"text","text":"<system-reminder>ctx</system-reminder>"},{"type":"text","text":"alpha"}]},
		{"role":"assistant","content":[{"type":"text","text":"turn 1: alpha"}]},
		{"role":"user","content":"beta"}]}`)
	var msg struct {
		Content []struct{ Type, Text string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &msg))
	assert.Equal(t, "turn 2: alpha | beta", msg.Content[0].Text)

	_, body = post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true,"tools":[{"name":"Bash"},{"name":"mcp__tether__ask_user"}],
		"messages":[{"role":"user","content":"ASK_USER: which colour?"}]}`)
	evs := sseData(t, body)
	require.NotEmpty(t, evs)
	assert.Equal(t, "message_start", evs[0]["type"])
	block := evs[1]["content_block"].(map[string]any)
	assert.Equal(t, "tool_use", block["type"])
	assert.Equal(t, "mcp__tether__ask_user", block["name"])
	assert.Equal(t, `{"questions":["which colour?"]}`, evs[2]["delta"].(map[string]any)["partial_json"])
	assert.Equal(t, "tool_use", evs[len(evs)-2]["delta"].(map[string]any)["stop_reason"])

	_, body = post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true,"messages":[
		{"role":"user","content":"ASK_USER: which colour?"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"mcp__tether__ask_user","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"sent"}]}]}`)
	evs = sseData(t, body)
	assert.Equal(t, "turn 1: ASK_USER: which colour?", evs[2]["delta"].(map[string]any)["text"], "after a tool result it answers normally")
	last := s.Turns()[len(s.Turns())-1]
	assert.True(t, last.AfterToolResult)
	assert.Equal(t, "sent", last.ToolResult)
}

func TestAnthropicWithoutToolAsksInText(t *testing.T) {
	s := start(t)
	_, body := post(t, s.URL()+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"ASK_USER: why?"}]}`)
	assert.Contains(t, body, `"text":"ASK_USER: why?"`)
}

func TestResponsesStreamAndNamespaceTool(t *testing.T) {
	s := start(t)
	_, body := post(t, s.URL()+"/v1/responses", `{"model":"m","stream":true,
		"tools":[{"type":"function","name":"exec_command"},{"type":"namespace","name":"mcp__tether","tools":[{"type":"function","name":"ask_user"}]}],
		"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>x</environment_context>"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"ASK_USER: which?"}]}]}`)
	evs := sseData(t, body)
	var done map[string]any
	for _, e := range evs {
		if e["type"] == "response.output_item.done" {
			done = e["item"].(map[string]any)
		}
	}
	require.NotNil(t, done)
	assert.Equal(t, "function_call", done["type"])
	assert.Equal(t, "ask_user", done["name"])
	assert.Equal(t, "mcp__tether", done["namespace"])
	assert.Equal(t, "response.completed", evs[len(evs)-1]["type"])

	_, body = post(t, s.URL()+"/v1/responses", `{"model":"m","input":[
		{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"turn 1: a"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"b"}]}]}`)
	assert.Contains(t, body, `"text":"turn 2: a | b"`)
}

func TestChatCompletions(t *testing.T) {
	s := start(t)
	_, body := post(t, s.URL()+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[
		{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"a"}]},
		{"role":"assistant","content":"turn 1: a"},{"role":"user","content":"b"}]}`)
	evs := sseData(t, body)
	require.Len(t, evs, 2)
	delta := evs[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	assert.Equal(t, "turn 2: a | b", delta["content"])
	assert.True(t, strings.HasSuffix(strings.TrimSpace(body), "data: [DONE]"))

	_, body = post(t, s.URL()+"/v1/chat/completions", `{"model":"m","tools":[{"type":"function","function":{"name":"ask_user"}}],
		"messages":[{"role":"user","content":"ASK_USER: q"}]}`)
	assert.Contains(t, body, `"tool_calls"`)
	assert.Contains(t, body, `"finish_reason":"tool_calls"`)
}

func TestCues(t *testing.T) {
	s := start(t)
	_, body := post(t, s.URL()+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"REPLY: {\"a\":1}"}]}`)
	assert.Contains(t, body, `"content":"{\"a\":1}"`)
	resp, _ := post(t, s.URL()+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"HTTP_ERROR: 418"}]}`)
	assert.Equal(t, 418, resp.StatusCode)
	began := time.Now()
	post(t, s.URL()+"/v1/responses", `{"model":"m","input":"SLEEP: 300ms"}`)
	assert.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond)
}

func TestSideCalls(t *testing.T) {
	s := start(t)
	_, body := post(t, s.URL()+"/v1/messages/count_tokens", `{"model":"m","messages":[]}`)
	assert.Contains(t, body, "input_tokens")
	req, err := http.NewRequest(http.MethodGet, s.URL()+"/v1/models", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.Key())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Empty(t, s.Turns(), "side calls are not conversation turns")
	assert.Len(t, s.Requests(), 2)
}

// Every API reports the same deterministic usage, each in its own format:
// a conversation's first request writes the system tokens to the cache,
// later ones read them; the OpenAI APIs count cached tokens as input too.
func TestUsageOnEveryWire(t *testing.T) {
	s := start(t)
	first := Usage{Input: 20, Output: 5 + len("turn 1: a")/4, CacheWrite: SystemTokens}
	second := Usage{Input: 40, Output: 5 + len("turn 2: a | b")/4, CacheRead: SystemTokens}
	num := func(m map[string]any, path ...string) int {
		var v any = m
		for _, k := range path {
			v = v.(map[string]any)[k]
		}
		return int(v.(float64))
	}

	// Messages API: plain JSON, then a stream whose message_delta has the
	// cumulative output.
	_, body := post(t, s.URL()+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"a"}]}`)
	var msg map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &msg))
	assert.Equal(t, first.Input, num(msg, "usage", "input_tokens"))
	assert.Equal(t, first.Output, num(msg, "usage", "output_tokens"))
	assert.Equal(t, first.CacheWrite, num(msg, "usage", "cache_creation_input_tokens"))
	assert.Equal(t, 0, num(msg, "usage", "cache_read_input_tokens"))
	_, body = post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true,"messages":[
		{"role":"user","content":"a"},{"role":"assistant","content":"turn 1: a"},{"role":"user","content":"b"}]}`)
	evs := sseData(t, body)
	assert.Equal(t, 1, num(evs[0], "message", "usage", "output_tokens"))
	delta := evs[len(evs)-2]
	require.Equal(t, "message_delta", delta["type"])
	assert.Equal(t, second.Output, num(delta, "usage", "output_tokens"))
	assert.Equal(t, second.CacheRead, num(delta, "usage", "cache_read_input_tokens"))
	assert.Equal(t, second.Input, num(delta, "usage", "input_tokens"))

	// Responses API.
	_, body = post(t, s.URL()+"/v1/responses", `{"model":"m","input":[
		{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"turn 1: a"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"b"}]}]}`)
	var resp map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &resp))
	assert.Equal(t, second.Input+SystemTokens, num(resp, "usage", "input_tokens"))
	assert.Equal(t, SystemTokens, num(resp, "usage", "input_tokens_details", "cached_tokens"))
	assert.Equal(t, second.Output, num(resp, "usage", "output_tokens"))

	// Chat Completions, streamed: the last chunk carries the usage.
	_, body = post(t, s.URL()+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"a"}]}`)
	evs = sseData(t, body)
	last := evs[len(evs)-1]
	assert.Equal(t, first.Input+SystemTokens, num(last, "usage", "prompt_tokens"))
	assert.Equal(t, 0, num(last, "usage", "prompt_tokens_details", "cached_tokens"))
	assert.Equal(t, first.Output, num(last, "usage", "completion_tokens"))

	turns := s.Turns()
	require.Len(t, turns, 4)
	assert.Equal(t, []Usage{first, second, second, first}, []Usage{turns[0].Usage, turns[1].Usage, turns[2].Usage, turns[3].Usage})
	assert.Equal(t, first.Sum(second).Sum(second).Sum(first), s.Usage())

	// An HTTP error counts nothing.
	post(t, s.URL()+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"HTTP_ERROR: 500"}]}`)
	assert.Equal(t, Usage{}, s.Turns()[4].Usage)
}

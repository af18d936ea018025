package modelrelay

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/fakemodel"
)

// start serves a relay for cfg on a loopback port and returns it with the
// address the CLI would reach it at.
func start(t testing.TB, cfg Config) (*Relay, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r, err := Start(cfg, ln)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r, ln.Addr().String()
}

// call sends body to path at base with header set to value (the
// placeholder written into it where it says KEY) and returns the status and
// body.
func call(t testing.TB, method, url, header, value, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if header != "" {
		req.Header.Set(header, value)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// wires are one conversation request of each API the relay reads, whole
// and streamed, with the header its CLIs put the key in.
var wires = []struct {
	name, wire, path, header, prefix, body string
}{
	{"messages", agent.WireAnthropic, "/v1/messages", "X-Api-Key", "", `{"model":"m","messages":[{"role":"user","content":"alpha"}]}`},
	{"messages stream", agent.WireAnthropic, "/v1/messages", "X-Api-Key", "", `{"model":"m","stream":true,"messages":[{"role":"user","content":"alpha"}]}`},
	{"responses", agent.WireResponses, "/v1/responses", "Authorization", "Bearer ", `{"model":"m","input":"alpha"}`},
	{"responses stream", agent.WireResponses, "/v1/responses", "Authorization", "Bearer ", `{"model":"m","stream":true,"input":"alpha"}`},
	{"chat", agent.WireChat, "/v1/chat/completions", "Authorization", "Bearer ", `{"model":"m","messages":[{"role":"user","content":"alpha"}]}`},
	{"chat stream", agent.WireChat, "/v1/chat/completions", "Authorization", "Bearer ", `{"model":"m","stream":true,"messages":[{"role":"user","content":"alpha"}]}`},
	{"gemini", agent.WireGemini, "/v1beta/models/m:generateContent", "X-Goog-Api-Key", "", `{"contents":[{"role":"user","parts":[{"text":"alpha"}]}]}`},
	{"gemini stream", agent.WireGemini, "/v1beta/models/m:streamGenerateContent?alt=sse", "X-Goog-Api-Key", "", `{"contents":[{"role":"user","parts":[{"text":"alpha"}]}]}`},
}

// expect is the usage a relay of wire reads for what the fake model
// counted: the Messages API reports cache writes, the others count them
// as input.
func expect(wire string, u fakemodel.Usage) agent.Usage {
	if wire == agent.WireAnthropic {
		return agent.Usage{InputTokens: int64(u.Input), OutputTokens: int64(u.Output), CacheReadTokens: int64(u.CacheRead), CacheWriteTokens: int64(u.CacheWrite)}
	}
	return agent.Usage{InputTokens: int64(u.Input + u.CacheWrite), OutputTokens: int64(u.Output), CacheReadTokens: int64(u.CacheRead)}
}

// TestRelaySwapsTheKeyAndMetersEveryWire: on every API, whole and
// streamed, the model receives the real key where the CLI put the
// placeholder, the CLI gets the model's answer, and the relay reads the
// same usage the model counted.
func TestRelaySwapsTheKeyAndMetersEveryWire(t *testing.T) {
	fake := fakemodel.Start(t)
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			fake.Reset()
			var mu sync.Mutex
			var seen []agent.Usage
			r, addr := start(t, Config{Upstream: fake.URL(), Key: fake.Key(), Wire: w.wire,
				OnUsage: func(u agent.Usage) { mu.Lock(); seen = append(seen, u); mu.Unlock() }})
			code, body := call(t, http.MethodPost, "http://"+addr+w.path, w.header, w.prefix+r.Placeholder(), w.body)
			require.Equal(t, http.StatusOK, code, body)
			assert.Contains(t, body, "turn 1: alpha")
			reqs := fake.Requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, fake.Key(), reqs[0].Key, "the model got the real key")
			assert.NotContains(t, string(reqs[0].Body), r.Placeholder())
			want := expect(w.wire, fake.Usage())
			assert.Equal(t, want, r.Usage())
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, seen, "the relay reported the usage as it grew")
			assert.Equal(t, want, seen[len(seen)-1])
			assert.Equal(t, 1, r.Calls())
		})
	}
}

// TestRelayGeminiKeyInTheQuery: a key the CLI sends as ?key= is swapped
// there.
func TestRelayGeminiKeyInTheQuery(t *testing.T) {
	fake := fakemodel.Start(t)
	r, addr := start(t, Config{Upstream: fake.URL(), Key: fake.Key(), Wire: agent.WireGemini})
	code, body := call(t, http.MethodPost, "http://"+addr+"/v1beta/models/m:generateContent?key="+r.Placeholder(), "", "",
		`{"contents":[{"role":"user","parts":[{"text":"alpha"}]}]}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, fake.Key(), fake.Requests()[0].Key)
}

// TestRelayRefusesWithoutThePlaceholder: a request without the visit's
// placeholder (none, a wrong one, one that only contains it) never reaches
// the model, and no key is added to it.
func TestRelayRefusesWithoutThePlaceholder(t *testing.T) {
	fake := fakemodel.Start(t)
	r, addr := start(t, Config{Upstream: fake.URL(), Key: fake.Key(), Wire: agent.WireAnthropic})
	body := `{"model":"m","messages":[{"role":"user","content":"alpha"}]}`
	for _, v := range []struct{ header, value string }{
		{"", ""},
		{"X-Api-Key", "tether-placeholder-00000000000000000000000000000000"},
		{"X-Api-Key", "x" + r.Placeholder()},
		{"X-Api-Key", fake.Key()},
	} {
		code, got := call(t, http.MethodPost, "http://"+addr+"/v1/messages", v.header, v.value, body)
		assert.Equal(t, http.StatusUnauthorized, code, v)
		assert.Contains(t, got, `"authentication_error"`)
		assert.NotContains(t, got, fake.Key())
	}
	assert.Empty(t, fake.Requests(), "nothing reached the model")
	assert.Zero(t, r.Calls())
}

// TestRelayStopsAtTheBudget: with 400 tokens a call against a budget of
// 1,000, the third call is sent (800 spent before it) and the fourth is
// refused with the budget's name, in the wire's own error format.
func TestRelayStopsAtTheBudget(t *testing.T) {
	fake := fakemodel.Start(t)
	limits := []agent.Limit{{Name: "the run's budget", MaxTokens: 100000}, {Name: "the budget of node writer", MaxTokens: 1000}}
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			fake.Reset()
			r, addr := start(t, Config{Upstream: fake.URL(), Key: fake.Key(), Wire: w.wire, Limits: limits})
			body := strings.Replace(w.body, "alpha", `alpha\nTOKENS: 400`, 1)
			for i := 1; i <= 3; i++ {
				code, got := call(t, http.MethodPost, "http://"+addr+w.path, w.header, w.prefix+r.Placeholder(), body)
				require.Equal(t, http.StatusOK, code, "call %d: %s", i, got)
				assert.Empty(t, r.Stopped())
			}
			code, got := call(t, http.MethodPost, "http://"+addr+w.path, w.header, w.prefix+r.Placeholder(), body)
			assert.Equal(t, http.StatusBadRequest, code)
			assert.Contains(t, got, "the budget of node writer is spent: 1200 tokens used, max_tokens is 1000")
			var shape map[string]any
			require.NoError(t, json.Unmarshal([]byte(got), &shape), got)
			assert.Contains(t, shape, "error")
			assert.Equal(t, "the budget of node writer is spent: 1200 tokens used, max_tokens is 1000", r.Stopped())
			assert.Len(t, fake.Turns(), 3, "the fourth call never reached the model")
			assert.Equal(t, int64(1200), r.Usage().Tokens())
			assert.Equal(t, 3, r.Calls())
		})
	}
}

// TestRelaySpeaksTLSUpstream: an https endpoint is reached over TLS, the
// CLI still speaking plain HTTP to the relay.
func TestRelaySpeaksTLSUpstream(t *testing.T) {
	var got struct {
		key string
		tls bool
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.key, got.tls = r.Header.Get("X-Api-Key"), r.TLS != nil
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[],"usage":{"input_tokens":3,"output_tokens":4}}`)
	}))
	defer srv.Close()
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	r, addr := start(t, Config{Upstream: srv.URL, Key: "real-key", Wire: agent.WireAnthropic, Transport: tr})
	assert.True(t, strings.HasPrefix(r.BaseURL(addr), "http://"+addr))
	code, body := call(t, http.MethodPost, r.BaseURL(addr)+"/v1/messages", "X-Api-Key", r.Placeholder(), `{}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.True(t, got.tls)
	assert.Equal(t, "real-key", got.key)
	assert.Equal(t, agent.Usage{InputTokens: 3, OutputTokens: 4}, r.Usage())
}

// TestRelayKeepsTheEndpointsPath: the CLI's base URL keeps the endpoint's
// path, and a request below it reaches the same path upstream.
func TestRelayKeepsTheEndpointsPath(t *testing.T) {
	fake := fakemodel.Start(t)
	r, addr := start(t, Config{Upstream: fake.URL() + "/v1/", Key: fake.Key(), Wire: agent.WireChat})
	assert.Equal(t, "http://"+addr+"/v1", r.BaseURL(addr))
	code, body := call(t, http.MethodPost, r.BaseURL(addr)+"/chat/completions", "Authorization", "Bearer "+r.Placeholder(),
		`{"model":"m","messages":[{"role":"user","content":"alpha"}]}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "/v1/chat/completions", fake.Requests()[0].Path)
}

// TestRelayRefusesABadEndpoint: only http and https endpoints.
func TestRelayRefusesABadEndpoint(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "api.anthropic.com", "http://"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		_, err = Start(Config{Upstream: u}, ln)
		assert.ErrorIs(t, err, ErrBadUpstream, u)
	}
}

// TestRelayEndsWithClose: Close ends a call under way.
func TestRelayEndsWithClose(t *testing.T) {
	fake := fakemodel.Start(t)
	r, addr := start(t, Config{Upstream: fake.URL(), Key: fake.Key(), Wire: agent.WireChat})
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+addr+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"SLEEP: 30s"}]}`))
		req.Header.Set("Authorization", "Bearer "+r.Placeholder())
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	for len(fake.Turns()) == 0 {
		runtimeGosched()
	}
	require.NoError(t, r.Close())
	<-done
}

func runtimeGosched() { time.Sleep(5 * time.Millisecond) }

// TestRelayStopsAtACostBudget: the relay knows no prices; the cost the CLI
// reports as it goes (SetCost) counts against a cost bound, and the next
// call after it is spent is refused.
func TestRelayStopsAtACostBudget(t *testing.T) {
	fake := fakemodel.Start(t)
	r, addr := start(t, Config{Upstream: fake.URL(), Key: fake.Key(), Wire: agent.WireChat,
		Limits: []agent.Limit{{Name: "the run's budget", MaxCostUSD: 0.05, Spent: agent.Usage{CostUSD: 0.02, CostKnown: true}}}})
	body := `{"model":"m","messages":[{"role":"user","content":"alpha"}]}`
	code, got := call(t, http.MethodPost, "http://"+addr+"/v1/chat/completions", "Authorization", "Bearer "+r.Placeholder(), body)
	require.Equal(t, http.StatusOK, code, got)
	r.SetCost(0.04)
	code, got = call(t, http.MethodPost, "http://"+addr+"/v1/chat/completions", "Authorization", "Bearer "+r.Placeholder(), body)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, got, "the run's budget is spent: $0.0600 used, max_cost_usd is $0.05")
	assert.Len(t, fake.Turns(), 1)
}

// TestRelaySwapsOnlyWholeValues: the key goes only where a value is the
// placeholder; a value that merely contains it (an agent's own header, a
// query parameter it made up) reaches the endpoint as the agent wrote it.
func TestRelaySwapsOnlyWholeValues(t *testing.T) {
	var got http.Header
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, query = r.Header.Clone(), r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	r, addr := start(t, Config{Upstream: srv.URL, Key: "real-key", Wire: agent.WireAnthropic})
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages?note=x"+r.Placeholder(), strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("X-Api-Key", r.Placeholder())
	req.Header.Set("X-Note", "copy of "+r.Placeholder())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "real-key", got.Get("X-Api-Key"))
	assert.Equal(t, "copy of "+r.Placeholder(), got.Get("X-Note"))
	assert.NotContains(t, query, "real-key")
}

// Each API's usage, split as agent.Usage counts it: an OpenAI or Gemini
// input count holds its cached tokens, which become cache reads; Gemini's
// thinking is output and its tool-use prompt input; an object without
// counts (a stream's other events, an empty usage) counts nothing.
func TestUsageOfEachAPI(t *testing.T) {
	for _, c := range []struct {
		wire, body string
		want       agent.Usage
		ok         bool
	}{
		{agent.WireAnthropic, `{"type":"message","usage":{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":7,"cache_read_input_tokens":100}}`,
			agent.Usage{InputTokens: 10, OutputTokens: 5, CacheWriteTokens: 7, CacheReadTokens: 100}, true},
		{agent.WireAnthropic, `{"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}`, agent.Usage{InputTokens: 10, OutputTokens: 1}, true},
		{agent.WireAnthropic, `{"type":"message_delta","usage":{"output_tokens":42}}`, agent.Usage{OutputTokens: 42}, true},
		{agent.WireAnthropic, `{"type":"message_start"}`, agent.Usage{}, false},
		{agent.WireAnthropic, `{"type":"message","usage":{}}`, agent.Usage{}, false},
		{agent.WireAnthropic, `{"type":"content_block_delta","usage":{"input_tokens":9}}`, agent.Usage{}, false},
		{agent.WireResponses, `{"object":"response","usage":{"input_tokens":120,"output_tokens":8,"input_tokens_details":{"cached_tokens":100}}}`,
			agent.Usage{InputTokens: 20, CacheReadTokens: 100, OutputTokens: 8}, true},
		{agent.WireResponses, `{"type":"response.completed","response":{"usage":{"input_tokens":5,"output_tokens":3}}}`, agent.Usage{InputTokens: 5, OutputTokens: 3}, true},
		{agent.WireResponses, `{"type":"response.created","response":{"id":"r"}}`, agent.Usage{}, false},
		{agent.WireChat, `{"usage":{"prompt_tokens":50,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":30}}}`,
			agent.Usage{InputTokens: 20, CacheReadTokens: 30, OutputTokens: 4}, true},
		{agent.WireChat, `{"usage":{"prompt_tokens":50,"completion_tokens":4}}`, agent.Usage{InputTokens: 50, OutputTokens: 4}, true},
		{agent.WireChat, `{"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":9}}}`,
			agent.Usage{InputTokens: 0, CacheReadTokens: 5, OutputTokens: 1}, true},
		{agent.WireChat, `{"choices":[],"usage":null}`, agent.Usage{}, false},
		{agent.WireGemini, `{"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":6,"cachedContentTokenCount":10,"thoughtsTokenCount":3,"toolUsePromptTokenCount":2}}`,
			agent.Usage{InputTokens: 32, CacheReadTokens: 10, OutputTokens: 9}, true},
		{agent.WireGemini, `{"candidates":[]}`, agent.Usage{}, false},
		{agent.WireGemini, `not json`, agent.Usage{}, false},
	} {
		m := &meter{wire: c.wire}
		grew := m.object([]byte(c.body))
		assert.Equal(t, c.ok, grew, c.body)
		assert.Equal(t, c.ok, m.counted, c.body)
		assert.Equal(t, c.want, m.usage, c.body)
	}
}

// A stream's events are read however its bytes arrive: one at a time,
// with CRLF line ends, a data field over several lines, comments and
// [DONE] between, and a last event without its blank line; within one
// answer the counts are running totals, so the largest of each is kept.
func TestMeterReadsAStreamInAnyPieces(t *testing.T) {
	stream := "event: message_start\r\n" +
		"data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1,\"cache_read_input_tokens\":100}}}\r\n\r\n" +
		": keep-alive\n\n" +
		"data: {\"type\":\"message_delta\",\n" +
		"data: \"usage\":{\"output_tokens\":7}}\n\n" +
		"data: [DONE]\n\n" +
		"data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}"
	want := agent.Usage{InputTokens: 10, OutputTokens: 9, CacheReadTokens: 100}
	for _, size := range []int{1, 2, 7, len(stream)} {
		m := &meter{wire: agent.WireAnthropic, stream: true}
		for b := []byte(stream); len(b) > 0; {
			n := min(size, len(b))
			m.feed(b[:n])
			b = b[n:]
		}
		assert.Equal(t, agent.Usage{InputTokens: 10, OutputTokens: 7, CacheReadTokens: 100}, m.usage, "pieces of %d: before the last event ends", size)
		assert.True(t, m.finish(), "the last event without its blank line")
		assert.Equal(t, want, m.usage, "pieces of %d", size)
	}
	// A whole answer is no stream: finish reads nothing more.
	assert.False(t, (&meter{wire: agent.WireAnthropic}).finish())
}

// A line past maxLine is skipped whole (its event with it), and the
// stream is read on after it.
func TestMeterSkipsAnOverlongLine(t *testing.T) {
	defer func(n int) { maxLine = n }(maxLine)
	maxLine = 64
	long := `data: {"usage":{"prompt_tokens":1000,"completion_tokens":1000},"pad":"` + strings.Repeat("x", 100) + `"}`
	m := &meter{wire: agent.WireChat, stream: true}
	m.feed([]byte(long[:40]))
	m.feed([]byte(long[40:] + "\n\n"))
	assert.False(t, m.counted, "the long line was not read")
	m.feed([]byte("data: {\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n"))
	assert.Equal(t, agent.Usage{InputTokens: 3, OutputTokens: 2}, m.usage)
	// A data field that only grows past maxLine over several lines keeps
	// what fitted.
	m = &meter{wire: agent.WireChat, stream: true}
	m.feed([]byte("data: {\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\ndata: " + strings.Repeat("y", 50) + "\n\n"))
	assert.Equal(t, agent.Usage{InputTokens: 4, OutputTokens: 1}, m.usage)
}

// A whole answer past maxBody goes to the CLI as it came, unread; one
// within it is read, and its length is its own.
func TestRelayPassesALongAnswerUnread(t *testing.T) {
	defer func(n int) { maxBody = n }(maxBody)
	maxBody = 200
	long := `{"type":"message","usage":{"input_tokens":5,"output_tokens":5},"pad":"` + strings.Repeat("z", 300) + `"}`
	short := `{"type":"message","usage":{"input_tokens":5,"output_tokens":5}}`
	body := long
	r, send := relayTo(t, &body)
	assert.Equal(t, long, send(), "relayed whole")
	assert.Zero(t, r.Usage().Tokens(), "unread")
	body = short
	assert.Equal(t, short, send())
	assert.Equal(t, int64(10), r.Usage().Tokens())
}

// relayTo starts a relay to an upstream that answers every message with
// *answer, and returns it with a function that sends it a message and
// returns the answer the CLI got.
func relayTo(t *testing.T, answer *string) (*Relay, func() string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(*answer))
	}))
	t.Cleanup(srv.Close)
	r, addr := start(t, Config{Upstream: srv.URL, Key: "k", Wire: agent.WireAnthropic})
	return r, func() string {
		t.Helper()
		code, got := call(t, http.MethodPost, "http://"+addr+"/v1/messages", "X-Api-Key", r.Placeholder(), `{}`)
		require.Equal(t, http.StatusOK, code)
		return got
	}
}

// Without a key of the worker's the relay still takes only the
// placeholder, and sends no key header at all; with one, a query the CLI
// sent without the placeholder reaches the endpoint as it was written.
func TestRelayWithoutAKey(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(r.Context())
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	r, addr := start(t, Config{Upstream: srv.URL, Wire: agent.WireChat})
	code, _ := call(t, http.MethodPost, "http://"+addr+"/v1/chat/completions", "Authorization", "Bearer "+r.Placeholder(), `{}`)
	require.Equal(t, http.StatusOK, code)
	_, has := got.Header["Authorization"]
	assert.False(t, has, "no key, no header")
	code, _ = call(t, http.MethodPost, "http://"+addr+"/v1/chat/completions", "", "", `{}`)
	assert.Equal(t, http.StatusUnauthorized, code, "the placeholder is still required")

	r, addr = start(t, Config{Upstream: srv.URL, Key: "real", Wire: agent.WireGemini})
	code, _ = call(t, http.MethodPost, "http://"+addr+"/v1beta/models/m:generateContent?alt=sse&b=1%2B2", "X-Goog-Api-Key", r.Placeholder(), `{}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "alt=sse&b=1%2B2", got.URL.RawQuery, "a query without the placeholder is left as written")
	assert.Equal(t, "real", got.Header.Get("X-Goog-Api-Key"))
	code, body := call(t, http.MethodPost, "http://"+addr+"/v1beta/models/m:generateContent", "", "", `{}`)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body, `"UNAUTHENTICATED"`)
}

// The errors the relay writes are each API's own, with the code a CLI
// acts on: 401 for a wrong key, 400 for a spent budget (no CLI retries
// it), 502 for an endpoint out of reach.
func TestErrorBodies(t *testing.T) {
	for _, c := range []struct {
		wire string
		code int
		want string
	}{
		{agent.WireAnthropic, http.StatusUnauthorized, `"type":"authentication_error"`},
		{agent.WireAnthropic, http.StatusBadRequest, `"type":"invalid_request_error"`},
		{agent.WireAnthropic, http.StatusBadGateway, `"type":"api_error"`},
		{agent.WireGemini, http.StatusUnauthorized, `"status":"UNAUTHENTICATED"`},
		{agent.WireGemini, http.StatusBadRequest, `"status":"FAILED_PRECONDITION"`},
		{agent.WireGemini, http.StatusBadGateway, `"status":"UNAVAILABLE"`},
		{agent.WireChat, http.StatusUnauthorized, `"type":"invalid_api_key"`},
		{agent.WireResponses, http.StatusBadRequest, `"type":"budget_exceeded"`},
		{agent.WireChat, http.StatusBadGateway, `"type":"upstream_error"`},
	} {
		b := errorBody(c.wire, c.code, `say "x"`)
		assert.Contains(t, b, c.want, "%s %d", c.wire, c.code)
		assert.Contains(t, b, `say \"x\"`, "the message, quoted")
	}
	assert.Contains(t, errorBody(agent.WireGemini, 400, "m"), `"code":400`)
}

// An endpoint out of reach is a 502 the CLI shows, whose text never holds
// the key (a Gemini CLI's ?key= is in the URL the error quotes).
func TestRelayEndpointOutOfReach(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	r, addr := start(t, Config{Upstream: url, Key: "the-real-key", Wire: agent.WireGemini})
	code, body := call(t, http.MethodPost, "http://"+addr+"/v1beta/models/m:generateContent?key="+r.Placeholder(), "", "", `{}`)
	assert.Equal(t, http.StatusBadGateway, code)
	assert.Contains(t, body, "could not be reached")
	assert.NotContains(t, body, "the-real-key")
	assert.Equal(t, "x [key] y", scrub("x the-real-key y", "the-real-key"))
	assert.Equal(t, "as is", scrub("as is", ""))
}

// The bounds of a stream's lines and of an event's data are exact: a line
// of maxLine bytes and data lines that fill maxLine to the byte are read;
// a line one byte longer (a comment, here) drops its whole event.
func TestMeterBoundsAreExact(t *testing.T) {
	defer func(n int) { maxLine = n }(maxLine)
	maxLine = 80
	pad := func(s string, n int) string { return s[:len(s)-2] + strings.Repeat(" ", n-len(s)) + s[len(s)-2:] }
	line := pad(`data: {"usage":{"prompt_tokens":7,"completion_tokens":2}}`, maxLine)
	require.Len(t, line, maxLine)
	m := &meter{wire: agent.WireChat, stream: true}
	m.feed([]byte(line + "\n\n"))
	assert.Equal(t, agent.Usage{InputTokens: 7, OutputTokens: 2}, m.usage, "a line of maxLine bytes is read")

	// Two data lines whose data and newlines fill maxLine exactly.
	d1 := `{"usage":{"prompt_tokens":8,`
	d2 := pad(`"completion_tokens":3}}`, maxLine-len(d1)-2)
	require.Equal(t, maxLine, len(d1)+1+len(d2)+1)
	m = &meter{wire: agent.WireChat, stream: true}
	m.feed([]byte("data: " + d1 + "\ndata: " + d2 + "\n\n"))
	assert.Equal(t, agent.Usage{InputTokens: 8, OutputTokens: 3}, m.usage, "data that fills maxLine is read")

	m = &meter{wire: agent.WireChat, stream: true}
	m.feed([]byte(`data: {"usage":{"prompt_tokens":9,"completion_tokens":1}}` + "\n:" + strings.Repeat("c", maxLine) + "\n\n"))
	assert.False(t, m.counted, "a line past maxLine drops its event")
	m.feed([]byte(`data: {"usage":{"prompt_tokens":9,"completion_tokens":1}}` + "\n\n"))
	assert.Equal(t, agent.Usage{InputTokens: 9, OutputTokens: 1}, m.usage, "and the stream is read on")
}

// A whole answer of exactly maxBody bytes is still read.
func TestRelayReadsAnAnswerOfMaxBody(t *testing.T) {
	defer func(n int) { maxBody = n }(maxBody)
	short := `{"type":"message","usage":{"input_tokens":5,"output_tokens":5}}`
	maxBody = len(short)
	r, send := relayTo(t, &short)
	assert.Equal(t, short, send())
	assert.Equal(t, int64(10), r.Usage().Tokens())
}

// A stream that arrives in pieces, over time, reaches the CLI whole, each
// piece as it comes; the relay's live count follows it, and its last
// event, without a blank line after it, is counted when the stream ends.
// No answer's meter stays open after it.
func TestRelayStreamsInPieces(t *testing.T) {
	events := []string{
		`data: {"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}` + "\n\n",
		`data: {"type":"content_block_delta","delta":{"text":"hi"}}` + "\n\n",
		`data: {"type":"message_delta","usage":{"output_tokens":6}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			w.Write([]byte(e))
			w.(http.Flusher).Flush()
			time.Sleep(30 * time.Millisecond)
		}
	}))
	defer srv.Close()
	var (
		mu   sync.Mutex
		seen []agent.Usage
	)
	r, addr := start(t, Config{Upstream: srv.URL, Key: "k", Wire: agent.WireAnthropic,
		OnUsage: func(u agent.Usage) { mu.Lock(); seen = append(seen, u); mu.Unlock() }})
	code, got := call(t, http.MethodPost, "http://"+addr+"/v1/messages", "X-Api-Key", r.Placeholder(), `{}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, strings.Join(events, ""), got)
	assert.Equal(t, agent.Usage{InputTokens: 10, OutputTokens: 6}, r.Usage())
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= 2 && seen[len(seen)-1] == agent.Usage{InputTokens: 10, OutputTokens: 6}
	}, 5*time.Second, 10*time.Millisecond, "the live count went 11, then 16 when the stream ended")
	mu.Lock()
	assert.Equal(t, agent.Usage{InputTokens: 10, OutputTokens: 1}, seen[0])
	mu.Unlock()
	r.mu.Lock()
	assert.Empty(t, r.open, "no meter stays open")
	r.mu.Unlock()
}

// A request's head must arrive within headerTimeout: a client that never
// finishes one is cut off, not held open.
func TestRelayCutsASlowHead(t *testing.T) {
	defer func(d time.Duration) { headerTimeout = d }(headerTimeout)
	headerTimeout = 100 * time.Millisecond
	_, addr := start(t, Config{Upstream: "http://127.0.0.1:1", Wire: agent.WireChat})
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = io.ReadAll(c)
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the relay closed the connection before the test gave up: %v", err)
}

// Without a key, a placeholder in x-api-key or x-goog-api-key leaves no
// header behind either.
func TestRelayWithoutAKeySendsNoKeyHeader(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	r, addr := start(t, Config{Upstream: srv.URL, Wire: agent.WireAnthropic})
	for _, h := range []string{"X-Api-Key", "X-Goog-Api-Key"} {
		code, _ := call(t, http.MethodPost, "http://"+addr+"/v1/messages", h, r.Placeholder(), `{}`)
		require.Equal(t, http.StatusOK, code)
		_, has := got[h]
		assert.False(t, has, h)
	}
	// With a key, other headers the CLI sends stay.
	r, addr = start(t, Config{Upstream: srv.URL, Key: "real", Wire: agent.WireAnthropic})
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", r.Placeholder())
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "real", got.Get("X-Api-Key"))
	assert.Equal(t, "2023-06-01", got.Get("Anthropic-Version"))
}

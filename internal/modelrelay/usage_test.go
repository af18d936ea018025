package modelrelay

import (
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
)

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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	defer srv.Close()
	r, addr := start(t, Config{Upstream: srv.URL, Key: "k", Wire: agent.WireAnthropic})
	code, got := call(t, http.MethodPost, "http://"+addr+"/v1/messages", "X-Api-Key", r.Placeholder(), `{}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, long, got, "relayed whole")
	assert.Zero(t, r.Usage().Tokens(), "unread")
	body = short
	code, got = call(t, http.MethodPost, "http://"+addr+"/v1/messages", "X-Api-Key", r.Placeholder(), `{}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, short, got)
	assert.Equal(t, int64(10), r.Usage().Tokens())
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(short))
	}))
	defer srv.Close()
	r, addr := start(t, Config{Upstream: srv.URL, Key: "k", Wire: agent.WireAnthropic})
	code, got := call(t, http.MethodPost, "http://"+addr+"/v1/messages", "X-Api-Key", r.Placeholder(), `{}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, short, got)
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

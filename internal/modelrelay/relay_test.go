package modelrelay

import (
	"context"
	"crypto/tls"
	"encoding/json"
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

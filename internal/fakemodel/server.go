// Package fakemodel is the one faked thing in Tether's CLI tests: an HTTP
// server that speaks just enough of the Anthropic Messages API, the OpenAI
// Responses API, the OpenAI Chat Completions API and the Gemini API for
// the real agent CLIs (Claude Code, Codex, pi, Gemini CLI, grok, opencode)
// to hold a conversation with it.
//
// Its replies are deterministic and prove memory: a normal reply is
// "turn N: p1 | p2 | ... | pN" where p1..pN are the real user prompts found
// in the request (text the CLIs inject, such as system reminders and
// environment context, is ignored). Cues in the latest prompt change the
// reply; see Cue* constants. File cues (WRITE_FILE, EDIT_FILE, see
// files.go) make the model write and edit files through the asking CLI's
// own tools, on the turn they name, wherever in the conversation they are
// written.
//
// Like a real endpoint, it answers only requests that carry its key (Key),
// where the request's API carries one: x-api-key or Authorization: Bearer
// for the Messages API, Authorization: Bearer for the OpenAI APIs,
// x-goog-api-key or ?key= for the Gemini API. Any other key (a
// placeholder, an empty one) is refused with 401 in the API's own error
// format, so that no test passes by a key that never reached it.
package fakemodel

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// API names one wire protocol the server speaks.
type API string

// The protocols the server speaks.
const (
	Anthropic API = "anthropic" // POST /v1/messages (and count_tokens)
	Responses API = "responses" // POST /v1/responses
	Chat      API = "chat"      // POST /v1/chat/completions
	Gemini    API = "gemini"    // POST /v1beta/models/<model>:generateContent (and stream, countTokens)
	Other     API = "other"     // anything else (model listing, probes)
)

// Request is one request the server received and what it answered.
type Request struct {
	API    API
	Method string
	Path   string
	Body   []byte
	// Turn is true for a conversation request (one the brain answered), false
	// for side calls such as token counting or model listing.
	Turn bool
	// Prompts are the real user prompts of the conversation, oldest first.
	Prompts []string
	// Tools are the names of the tools the request offered.
	Tools []string
	// AfterToolResult is true when the request ends with a tool result.
	AfterToolResult bool
	// ToolResult is the text of that tool result.
	ToolResult string
	// Reply is the text answered, or "tool:<name> <arguments>" for a tool call.
	Reply string
	// Usage is the token usage reported with the answer (zero for an
	// HTTP error).
	Usage Usage
	// Key is the key the request carried, wherever its API puts it ("":
	// none); Refused marks a request answered 401 for it.
	Key     string
	Refused bool
}

// Server is a running fake model.
type Server struct {
	srv *httptest.Server
	key string

	mu   sync.Mutex
	reqs []Request
	seq  int
}

// Start starts a server on loopback and closes it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := New()
	t.Cleanup(s.Close)
	return s
}

// New starts a server on loopback; the caller closes it.
func New() *Server {
	var b [12]byte
	_, _ = rand.Read(b[:])
	s := &Server{key: "fake-model-key-" + hex.EncodeToString(b[:])}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Key is the only key the server answers: random, so that it is also a
// canary a test can look for wherever it must not be.
func (s *Server) Key() string { return s.key }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// URL is the server's base URL, without a trailing slash and without /v1.
func (s *Server) URL() string { return s.srv.URL }

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Refused returns the requests refused for their key.
func (s *Server) Refused() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Refused {
			out = append(out, r)
		}
	}
	return out
}

// Turns returns the conversation requests received so far.
func (s *Server) Turns() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Turn {
			out = append(out, r)
		}
	}
	return out
}

// Usage sums the usage reported for every conversation request so far.
func (s *Server) Usage() Usage {
	var sum Usage
	for _, r := range s.Turns() {
		sum = sum.Sum(r.Usage)
	}
	return sum
}

// Reset forgets the requests received so far.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = nil
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
}

func (s *Server) nextID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Path: r.URL.Path, Body: body, API: Other}
	path := strings.TrimSuffix(r.URL.Path, "/")
	rec.API = apiOf(r.Method, path)
	rec.Key = keyOf(rec.API, r)
	if subtle.ConstantTimeCompare([]byte(rec.Key), []byte(s.key)) != 1 {
		rec.Refused = true
		s.record(rec)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, unauthorized(rec.API))
		return
	}
	rec.API = Other
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		rec.API = Anthropic
		s.record(rec)
		writeJSON(w, map[string]any{"input_tokens": 1 + len(body)/4})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		rec.API = Anthropic
		s.anthropic(w, r, rec)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		rec.API = Responses
		s.responses(w, r, rec)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		rec.API = Chat
		s.chat(w, r, rec)
	case r.Method == http.MethodPost && geminiMethod(path) != "":
		rec.API = Gemini
		s.gemini(w, r, rec, geminiMethod(path))
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		s.record(rec)
		writeJSON(w, map[string]any{
			"object": "list", "data": []any{}, "models": []any{},
			"has_more": false, "first_id": nil, "last_id": nil,
		})
	default:
		// Side calls the CLIs make (event logging, feature flags, metrics)
		// get an empty success so that nothing retries.
		s.record(rec)
		writeJSON(w, map[string]any{})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// apiOf is the API a request is for, by its method and path.
func apiOf(method, path string) API {
	switch {
	case method == http.MethodPost && (strings.HasSuffix(path, "/messages/count_tokens") || strings.HasSuffix(path, "/messages")):
		return Anthropic
	case method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		return Responses
	case method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		return Chat
	case method == http.MethodPost && geminiMethod(path) != "":
		return Gemini
	}
	return Other
}

// keyOf is the key r carries where api's real endpoint reads it; for a
// request of no known API, wherever any of them does.
func keyOf(api API, r *http.Request) string {
	bearer := func() string {
		k, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		return k
	}
	switch api {
	case Anthropic:
		if k := r.Header.Get("X-Api-Key"); k != "" {
			return k
		}
		return bearer()
	case Responses, Chat:
		return bearer()
	case Gemini:
		if k := r.Header.Get("X-Goog-Api-Key"); k != "" {
			return k
		}
		return r.URL.Query().Get("key")
	}
	for _, k := range []string{r.Header.Get("X-Api-Key"), r.Header.Get("X-Goog-Api-Key"), bearer(), r.URL.Query().Get("key")} {
		if k != "" {
			return k
		}
	}
	return ""
}

// unauthorized is a refusal for a wrong key in api's own error format.
func unauthorized(api API) string {
	switch api {
	case Anthropic:
		return `{"type":"error","error":{"type":"authentication_error","message":"fake model: invalid x-api-key"}}`
	case Gemini:
		return `{"error":{"code":401,"message":"fake model: API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED"}}`
	}
	return `{"error":{"message":"fake model: Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`
}

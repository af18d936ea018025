package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// What the three APIs share on the wire: message content, the start of a
// conversation turn, ids and token counts, and server-sent events.

// contentPart is one part of message content: an Anthropic content block
// or an OpenAI content part.
type contentPart struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"` // Anthropic tool_result: string or blocks
}

// contentParts decodes content that is either a string, which becomes one
// text part, or an array of parts.
func contentParts(raw json.RawMessage) []contentPart {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []contentPart{{Type: "text", Text: s}}
	}
	var parts []contentPart
	_ = json.Unmarshal(raw, &parts)
	return parts
}

// contentTexts returns the non-empty texts of content.
func contentTexts(raw json.RawMessage) []string {
	var out []string
	for _, p := range contentParts(raw) {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

// wireErrors are the error bodies of an API: one for a request that is not
// JSON, and a format taking the status for an HTTP error on cue.
type wireErrors struct {
	badJSON string
	onCue   string
}

var (
	anthropicErrors = wireErrors{
		badJSON: `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`,
		onCue:   `{"type":"error","error":{"type":"invalid_request_error","message":"fake model: HTTP %d on cue"}}`,
	}
	// openAIErrors serve both the Responses and the Chat Completions API.
	openAIErrors = wireErrors{
		badJSON: `{"error":{"message":"bad json","type":"invalid_request_error"}}`,
		onCue:   `{"error":{"message":"fake model: HTTP %d on cue","type":"invalid_request_error","code":null}}`,
	}
)

// turn starts the answer to a conversation request: it decodes rec's body
// into req (a pointer to the API's request type), asks the brain for the
// reply and records the request with it, waits out the reply's delay and
// answers an HTTP error on cue. When ok is true the caller writes rep in
// its API's format, using id for the ids in it; otherwise the answer is
// already written or the client went away.
func (s *Server) turn(w http.ResponseWriter, r *http.Request, rec Request,
	req interface{ conversation() conversation }, errs wireErrors) (rep reply, u Usage, id int, ok bool) {
	if err := json.Unmarshal(rec.Body, req); err != nil {
		s.record(rec)
		http.Error(w, errs.badJSON, http.StatusBadRequest)
		return reply{}, Usage{}, 0, false
	}
	c := req.conversation()
	rep = c.reply()
	rec.Turn, rec.Prompts, rec.Tools = true, c.prompts, c.tools
	rec.AfterToolResult, rec.ToolResult, rec.Reply = c.afterToolResult, c.toolResult, rep.String()
	if rep.status == 0 {
		u = c.usage(rep)
		rec.Usage = u
	}
	s.record(rec)
	if !sleep(r, rep.delay) {
		return reply{}, Usage{}, 0, false
	}
	if rep.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		fmt.Fprintf(w, errs.onCue, rep.status)
		return reply{}, Usage{}, 0, false
	}
	return rep, u, s.nextID(), true
}

// sleep waits d unless the client goes away first; it reports whether to go on.
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// fakeID is the id of the answer numbered n, after an API's prefix for
// that kind of id ("msg_", "call_", ...).
func fakeID(prefix string, n int) string {
	return fmt.Sprintf("%sfake%06d", prefix, n)
}

// Usage is what the server reports a conversation request cost, in the
// Messages API's split: Input excludes the tokens read from and written to
// the prompt cache. Each API puts it on the wire in its own format; the
// OpenAI ones have no cache writes, so there CacheWrite counts as input.
//
// The counts are a function of the conversation's shape and the reply,
// never of the bytes a CLI sent (which change with its version, paths and
// dates), so a test can assert exact numbers:
//
//	Input      = 20 per prompt + 30 per tool call since the latest prompt
//	Output     = 5 + len(reply)/4, reply as Request.Reply spells it
//	CacheWrite = SystemTokens on a conversation's first request, else 0
//	CacheRead  = SystemTokens on every later request, else 0
//
// unless the latest prompt has a CueTokens line: then every request of its
// turn costs exactly that many tokens, input and output, nothing cached.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int
}

// SystemTokens stands for what a CLI sends on every request (system
// prompt, tools): cached by the first request of a conversation, read from
// the cache by the others.
const SystemTokens = 1000

// Sum adds u and v.
func (u Usage) Sum(v Usage) Usage {
	return Usage{Input: u.Input + v.Input, Output: u.Output + v.Output,
		CacheRead: u.CacheRead + v.CacheRead, CacheWrite: u.CacheWrite + v.CacheWrite}
}

// openAIInput is the input token count of the OpenAI APIs: every input
// token, the cached ones included.
func (u Usage) openAIInput() int { return u.Input + u.CacheRead + u.CacheWrite }

// usage is what answering the conversation with rep costs.
func (c conversation) usage(rep reply) Usage {
	if n := c.tokensPerCall(); n > 0 {
		out := min(5+len(rep.String())/4, n)
		return Usage{Input: n - out, Output: out}
	}
	u := Usage{Input: 20*len(c.prompts) + 30*c.callsSincePrompt, Output: 5 + len(rep.String())/4}
	if len(c.prompts) <= 1 && c.callsSincePrompt == 0 {
		u.CacheWrite = SystemTokens
	} else {
		u.CacheRead = SystemTokens
	}
	return u
}

type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, f: f}
}

// event writes one SSE event; an empty name writes a data-only event.
func (s *sseWriter) event(name string, v any) {
	b, _ := json.Marshal(v)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	s.raw("data: " + string(b))
}

// raw writes one line as a whole event.
func (s *sseWriter) raw(line string) {
	fmt.Fprintf(s.w, "%s\n\n", line)
	if s.f != nil {
		s.f.Flush()
	}
}

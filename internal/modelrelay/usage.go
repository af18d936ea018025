package modelrelay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/tether-run/tether/internal/agent"
)

// maxBody is the most of a whole (not streamed) answer the relay reads
// before passing it on; a longer one is relayed unread. maxLine bounds
// one line of an event stream the relay reads. (Variables, for tests.)
var (
	maxBody = 16 << 20
	maxLine = 4 << 20
)

// meter reads the usage of one answer: every event of a stream as it
// passes, or the whole body. The counts in one answer are running totals
// (a stream repeats them as they grow), so it keeps the largest of each.
type meter struct {
	wire   string
	stream bool
	// buf is the stream's line being read; data gathers the data lines
	// of its event being read.
	buf, data bytes.Buffer
	skip      bool // the line being read is past maxLine
	usage     agent.Usage
	counted   bool
}

// newMeter is the meter of resp, registered with the relay; nil for an
// answer that carries no usage (an error, a model list).
func (r *Relay) newMeter(resp *http.Response) *meter {
	if resp.StatusCode/100 != 2 {
		return nil
	}
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	m := &meter{wire: r.wire, stream: strings.HasPrefix(ct, "text/event-stream")}
	if !m.stream && !strings.Contains(ct, "json") {
		return nil
	}
	r.mu.Lock()
	r.open[m] = struct{}{}
	r.mu.Unlock()
	return m
}

// feed reads b, the next bytes of m's answer, and reports the visit's
// usage when it grew. A meter's counts change under the relay's lock,
// where Usage reads them.
func (r *Relay) feed(m *meter, b []byte) {
	if m == nil {
		return
	}
	r.mu.Lock()
	grew := m.feed(b)
	u := r.usageLocked()
	r.mu.Unlock()
	if grew && r.onUsage != nil {
		r.onUsage(u)
	}
}

// whole reads the usage of a whole answer, body, and closes m.
func (r *Relay) whole(m *meter, body []byte) {
	r.mu.Lock()
	grew := m.object(body)
	r.mu.Unlock()
	r.closeMeter(m)
	if grew && r.onUsage != nil {
		r.onUsage(r.Usage())
	}
}

// closeMeter adds what m read to the visit's usage once its answer ends
// (once only).
func (r *Relay) closeMeter(m *meter) {
	if m == nil {
		return
	}
	r.mu.Lock()
	if _, open := r.open[m]; !open {
		r.mu.Unlock()
		return
	}
	grew := m.finish()
	delete(r.open, m)
	r.usage = addTokens(r.usage, m)
	u := r.usage
	r.mu.Unlock()
	if grew && r.onUsage != nil {
		r.onUsage(u)
	}
}

// addTokens is u with m's token counts added.
func addTokens(u agent.Usage, m *meter) agent.Usage {
	if m == nil || !m.counted {
		return u
	}
	u.InputTokens += m.usage.InputTokens
	u.OutputTokens += m.usage.OutputTokens
	u.CacheReadTokens += m.usage.CacheReadTokens
	u.CacheWriteTokens += m.usage.CacheWriteTokens
	return u
}

// feed reads b, the next bytes of a stream, and reports whether its
// counts grew.
func (m *meter) feed(b []byte) bool {
	grew := false
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			m.addLine(b)
			return grew
		}
		m.addLine(b[:i])
		b = b[i+1:]
		grew = m.endLine() || grew
	}
}

// finish reads what is left of a stream: a last line and event without
// their ends. It reports whether the counts grew.
func (m *meter) finish() bool {
	if !m.stream {
		return false
	}
	grew := m.endLine()
	return m.endEvent() || grew
}

// endEvent reads the event whose data lines were gathered.
func (m *meter) endEvent() bool {
	grew := m.object(m.data.Bytes())
	m.data.Reset()
	return grew
}

func (m *meter) addLine(b []byte) {
	if m.skip {
		return
	}
	if m.buf.Len()+len(b) > maxLine {
		m.skip = true
		m.buf.Reset()
		return
	}
	m.buf.Write(b)
}

// endLine handles the line read so far: a data line is kept, a blank line
// ends the event.
func (m *meter) endLine() bool {
	line := bytes.TrimSuffix(m.buf.Bytes(), []byte("\r"))
	skipped := m.skip
	m.buf.Reset()
	m.skip = false
	switch {
	case skipped:
		m.data.Reset()
		return false
	case len(line) == 0:
		return m.endEvent()
	case bytes.HasPrefix(line, []byte("data:")):
		// An event's data lines join with newlines; what would go past
		// maxLine is left out.
		d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
		if m.data.Len()+len(d)+1 <= maxLine {
			m.data.Write(d)
			m.data.WriteByte('\n')
		}
	}
	return false
}

// object reads the usage in one JSON object of the answer (the whole body,
// or one event's data) and reports whether the counts grew.
func (m *meter) object(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return false // "[DONE]", a keep-alive
	}
	var u agent.Usage
	var ok bool
	switch m.wire {
	case agent.WireAnthropic:
		u, ok = anthropicUsage(b)
	case agent.WireResponses:
		u, ok = responsesUsage(b)
	case agent.WireChat:
		u, ok = chatUsage(b)
	case agent.WireGemini:
		u, ok = geminiUsage(b)
	}
	if !ok {
		return false
	}
	before := m.usage
	m.usage.InputTokens = max(m.usage.InputTokens, u.InputTokens)
	m.usage.OutputTokens = max(m.usage.OutputTokens, u.OutputTokens)
	m.usage.CacheReadTokens = max(m.usage.CacheReadTokens, u.CacheReadTokens)
	m.usage.CacheWriteTokens = max(m.usage.CacheWriteTokens, u.CacheWriteTokens)
	m.counted = true
	return m.usage != before
}

// anthropicCounts are the Messages API's usage.
type anthropicCounts struct {
	Input      *int64 `json:"input_tokens"`
	Output     *int64 `json:"output_tokens"`
	CacheWrite int64  `json:"cache_creation_input_tokens"`
	CacheRead  int64  `json:"cache_read_input_tokens"`
}

func (c *anthropicCounts) usage() (agent.Usage, bool) {
	if c == nil || c.Input == nil && c.Output == nil {
		return agent.Usage{}, false
	}
	u := agent.Usage{CacheWriteTokens: c.CacheWrite, CacheReadTokens: c.CacheRead}
	if c.Input != nil {
		u.InputTokens = *c.Input
	}
	if c.Output != nil {
		u.OutputTokens = *c.Output
	}
	return u, true
}

// anthropicUsage reads a message (whole), or a stream's message_start
// (the message's usage so far) and message_delta (its running totals).
func anthropicUsage(b []byte) (agent.Usage, bool) {
	var v struct {
		Type    string           `json:"type"`
		Usage   *anthropicCounts `json:"usage"`
		Message *struct {
			Usage *anthropicCounts `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(b, &v) != nil {
		return agent.Usage{}, false
	}
	switch v.Type {
	case "message", "message_delta":
		return v.Usage.usage()
	case "message_start":
		if v.Message != nil {
			return v.Message.Usage.usage()
		}
	}
	return agent.Usage{}, false
}

// openAIInput splits an OpenAI input count into the cached part and the
// rest, as agent.Usage counts them.
func openAIInput(input, cached, output int64) agent.Usage {
	cached = min(max(cached, 0), input)
	return agent.Usage{InputTokens: input - cached, CacheReadTokens: cached, OutputTokens: output}
}

type responsesCounts struct {
	Input   int64 `json:"input_tokens"`
	Output  int64 `json:"output_tokens"`
	Details struct {
		Cached int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

// responsesUsage reads a response (whole), or a stream's event that
// carries the finished response (response.completed, .incomplete,
// .failed).
func responsesUsage(b []byte) (agent.Usage, bool) {
	var v struct {
		Object   string           `json:"object"`
		Usage    *responsesCounts `json:"usage"`
		Response *struct {
			Usage *responsesCounts `json:"usage"`
		} `json:"response"`
	}
	if json.Unmarshal(b, &v) != nil {
		return agent.Usage{}, false
	}
	c := v.Usage
	if c == nil && v.Response != nil {
		c = v.Response.Usage
	}
	if c == nil {
		return agent.Usage{}, false
	}
	return openAIInput(c.Input, c.Details.Cached, c.Output), true
}

// chatUsage reads a completion (whole), or a stream's chunk that carries
// the usage (the last, with stream_options.include_usage).
func chatUsage(b []byte) (agent.Usage, bool) {
	var v struct {
		Usage *struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
			Details    *struct {
				Cached int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if json.Unmarshal(b, &v) != nil || v.Usage == nil {
		return agent.Usage{}, false
	}
	var cached int64
	if v.Usage.Details != nil {
		cached = v.Usage.Details.Cached
	}
	return openAIInput(v.Usage.Prompt, cached, v.Usage.Completion), true
}

// geminiUsage reads a GenerateContentResponse (whole, or one chunk of a
// stream: each carries the totals so far). Thinking counts as output.
func geminiUsage(b []byte) (agent.Usage, bool) {
	var v struct {
		Usage *struct {
			Prompt     int64 `json:"promptTokenCount"`
			Candidates int64 `json:"candidatesTokenCount"`
			Cached     int64 `json:"cachedContentTokenCount"`
			Thoughts   int64 `json:"thoughtsTokenCount"`
			ToolPrompt int64 `json:"toolUsePromptTokenCount"`
		} `json:"usageMetadata"`
	}
	if json.Unmarshal(b, &v) != nil || v.Usage == nil {
		return agent.Usage{}, false
	}
	return openAIInput(v.Usage.Prompt+v.Usage.ToolPrompt, v.Usage.Cached, v.Usage.Candidates+v.Usage.Thoughts), true
}

// errorBody is an error answer in the wire's own format.
func errorBody(wire string, code int, msg string) string {
	quoted, _ := json.Marshal(msg)
	switch wire {
	case agent.WireAnthropic:
		typ := "invalid_request_error"
		switch code {
		case http.StatusUnauthorized:
			typ = "authentication_error"
		case http.StatusBadGateway:
			typ = "api_error"
		}
		return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%s}}`, typ, quoted)
	case agent.WireGemini:
		status := "FAILED_PRECONDITION"
		switch code {
		case http.StatusUnauthorized:
			status = "UNAUTHENTICATED"
		case http.StatusBadGateway:
			status = "UNAVAILABLE"
		}
		return fmt.Sprintf(`{"error":{"code":%d,"message":%s,"status":%q}}`, code, quoted, status)
	}
	typ := "budget_exceeded"
	switch code {
	case http.StatusUnauthorized:
		typ = "invalid_api_key"
	case http.StatusBadGateway:
		typ = "upstream_error"
	}
	return fmt.Sprintf(`{"error":{"message":%s,"type":%q,"code":%q}}`, quoted, typ, typ)
}

package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"` // tool_result: string or blocks
}

func anthropicBlocks(raw json.RawMessage) []anthropicBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var blocks []anthropicBlock
	_ = json.Unmarshal(raw, &blocks)
	return blocks
}

func (req anthropicRequest) conversation() conversation {
	var c conversation
	for _, t := range req.Tools {
		c.tools = append(c.tools, t.Name)
	}
	for i, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		last := i == len(req.Messages)-1
		var texts []string
		for _, b := range anthropicBlocks(m.Content) {
			switch b.Type {
			case "text":
				if t := promptText(b.Text); t != "" {
					texts = append(texts, t)
				}
			case "tool_result":
				if last {
					c.afterToolResult = true
					var parts []string
					for _, rb := range anthropicBlocks(b.Content) {
						parts = append(parts, rb.Text)
					}
					c.toolResult = strings.Join(parts, "\n")
				}
			}
		}
		if len(texts) > 0 {
			c.prompts = append(c.prompts, strings.Join(texts, "\n"))
		}
	}
	return c
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request, rec Request) {
	var req anthropicRequest
	if err := json.Unmarshal(rec.Body, &req); err != nil {
		s.record(rec)
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	c := req.conversation()
	rep := c.reply()
	rec.Turn, rec.Prompts, rec.Tools = true, c.prompts, c.tools
	rec.AfterToolResult, rec.ToolResult, rec.Reply = c.afterToolResult, c.toolResult, rep.String()
	s.record(rec)
	if !sleep(r, rep.delay) {
		return
	}
	if rep.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"fake model: HTTP %d on cue"}}`, rep.status)
		return
	}
	id := s.nextID()
	msgID := fmt.Sprintf("msg_fake%06d", id)
	toolID := fmt.Sprintf("toolu_fake%06d", id)
	usage := map[string]any{"input_tokens": 10 + len(rec.Body)/400, "output_tokens": 5,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}

	var content []map[string]any
	stop := "end_turn"
	if rep.tool != "" {
		stop = "tool_use"
		content = append(content, map[string]any{"type": "tool_use", "id": toolID, "name": rep.tool,
			"input": json.RawMessage(rep.args)})
	} else {
		content = append(content, map[string]any{"type": "text", "text": rep.text})
	}
	if !req.Stream {
		writeJSON(w, map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	if rep.tool != "" {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": toolID, "name": rep.tool, "input": map[string]any{}}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": rep.args}})
	} else {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": rep.text}})
	}
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
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
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sseWriter) raw(line string) {
	fmt.Fprintf(s.w, "%s\n\n", line)
	if s.f != nil {
		s.f.Flush()
	}
}

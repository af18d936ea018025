package fakemodel

import (
	"encoding/json"
	"maps"
	"net/http"
)

type anthropicRequest struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func (req anthropicRequest) conversation() conversation {
	var c conversation
	for _, t := range req.Tools {
		c.tools = append(c.tools, t.Name)
	}
	for _, t := range contentTexts(req.System) {
		c.noteText(t)
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "assistant":
			for _, b := range contentParts(m.Content) {
				if b.Type == "tool_use" {
					c.callsSincePrompt++
				}
			}
		case "system":
			for _, t := range contentTexts(m.Content) {
				c.noteText(t)
			}
		}
		if m.Role != "user" {
			continue
		}
		var texts []string
		for _, b := range contentParts(m.Content) {
			switch b.Type {
			case "text":
				c.noteText(b.Text)
				texts = append(texts, b.Text)
			case "tool_result":
				if i == len(req.Messages)-1 {
					var parts []string
					for _, rb := range contentParts(b.Content) {
						parts = append(parts, rb.Text)
					}
					c.endWithToolResult(parts)
				}
			}
		}
		c.addPrompt(texts)
	}
	return c
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request, rec Request) {
	var req anthropicRequest
	rep, u, id, ok := s.turn(w, r, rec, &req, anthropicErrors)
	if !ok {
		return
	}
	msgID := fakeID("msg_", id)
	toolID := fakeID("toolu_", id)
	usage := map[string]any{"input_tokens": u.Input, "output_tokens": u.Output,
		"cache_creation_input_tokens": u.CacheWrite, "cache_read_input_tokens": u.CacheRead}

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
	// As the real API streams it: message_start counts the first output
	// token, message_delta the cumulative output with the input again.
	started := maps.Clone(usage)
	started["output_tokens"] = 1
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": started}})
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
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

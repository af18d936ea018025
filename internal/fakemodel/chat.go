package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (req chatRequest) conversation() conversation {
	var c conversation
	for _, t := range req.Tools {
		c.tools = append(c.tools, t.Function.Name)
	}
	for i, m := range req.Messages {
		last := i == len(req.Messages)-1
		switch m.Role {
		case "user":
			var texts []string
			for _, t := range responsesText(m.Content) {
				if t = promptText(t); t != "" {
					texts = append(texts, t)
				}
			}
			if len(texts) > 0 {
				c.prompts = append(c.prompts, strings.Join(texts, "\n"))
			}
		case "tool":
			if last {
				c.afterToolResult = true
				c.toolResult = strings.Join(responsesText(m.Content), "\n")
			}
		}
	}
	return c
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, rec Request) {
	var req chatRequest
	if err := json.Unmarshal(rec.Body, &req); err != nil {
		s.record(rec)
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
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
		fmt.Fprintf(w, `{"error":{"message":"fake model: HTTP %d on cue","type":"invalid_request_error","code":null}}`, rep.status)
		return
	}
	id := s.nextID()
	chatID := fmt.Sprintf("chatcmpl-fake%06d", id)
	finish := "stop"
	msg := map[string]any{"role": "assistant", "content": rep.text}
	if rep.tool != "" {
		finish = "tool_calls"
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": fmt.Sprintf("call_fake%06d", id), "type": "function",
			"function": map[string]any{"name": rep.tool, "arguments": rep.args}}}}
	}
	usage := map[string]any{"prompt_tokens": 10 + len(rec.Body)/400, "completion_tokens": 5, "total_tokens": 15 + len(rec.Body)/400}
	if !req.Stream {
		writeJSON(w, map[string]any{"id": chatID, "object": "chat.completion", "created": 0, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	sse := newSSE(w)
	chunk := func(delta map[string]any, finish any, usage any) map[string]any {
		c := map[string]any{"id": chatID, "object": "chat.completion.chunk", "created": 0, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		return c
	}
	sse.event("", chunk(msg, nil, nil))
	sse.event("", chunk(map[string]any{}, finish, usage))
	sse.raw("data: [DONE]")
}

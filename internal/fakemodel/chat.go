package fakemodel

import (
	"encoding/json"
	"net/http"
)

type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct{}      `json:"tool_calls"`
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
		switch m.Role {
		case "system", "developer":
			for _, t := range contentTexts(m.Content) {
				c.noteText(t)
			}
		case "assistant":
			c.callsSincePrompt += len(m.ToolCalls)
		case "user":
			c.addPrompt(contentTexts(m.Content))
		case "tool":
			if i == len(req.Messages)-1 {
				c.endWithToolResult(contentTexts(m.Content))
			}
		}
	}
	return c
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, rec Request) {
	var req chatRequest
	rep, u, id, ok := s.turn(w, r, rec, &req, openAIErrors)
	if !ok {
		return
	}
	chatID := fakeID("chatcmpl-", id)
	finish := "stop"
	msg := map[string]any{"role": "assistant", "content": rep.text}
	if rep.tool != "" {
		finish = "tool_calls"
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": fakeID("call_", id), "type": "function",
			"function": map[string]any{"name": rep.tool, "arguments": rep.args}}}}
	}
	usage := map[string]any{"prompt_tokens": u.openAIInput(), "completion_tokens": u.Output, "total_tokens": u.openAIInput() + u.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.CacheRead}}
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

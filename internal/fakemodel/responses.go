package fakemodel

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
)

type responsesRequest struct {
	Model        string            `json:"model"`
	Stream       bool              `json:"stream"`
	Instructions string            `json:"instructions"`
	Input        json.RawMessage   `json:"input"`
	Tools        []json.RawMessage `json:"tools"`
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
}

// responsesToolNames lists offered tool names, looking inside namespace
// tools (Codex groups MCP tools of one server under a namespace) so that
// the ask_user tool is found whatever its grouping.
func responsesToolNames(tools []json.RawMessage) []string {
	var out []string
	for _, raw := range tools {
		var t struct {
			Type  string            `json:"type"`
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(raw, &t) != nil {
			continue
		}
		if len(t.Tools) > 0 {
			for _, sub := range responsesToolNames(t.Tools) {
				out = append(out, t.Name+"\x00"+sub)
			}
			continue
		}
		if t.Name != "" {
			out = append(out, t.Name)
		} else {
			out = append(out, t.Type)
		}
	}
	return out
}

func (req responsesRequest) conversation() conversation {
	var c conversation
	c.tools = responsesToolNames(req.Tools)
	c.customTools = map[string]bool{}
	for _, raw := range req.Tools {
		var t struct{ Type, Name string }
		if json.Unmarshal(raw, &t) == nil && t.Type == "custom" {
			c.customTools[t.Name] = true
		}
	}
	c.noteText(req.Instructions)
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		c.prompts = []string{s}
		return c
	}
	var items []responsesItem
	_ = json.Unmarshal(req.Input, &items)
	for i, it := range items {
		switch {
		case (it.Type == "message" || it.Type == "") && it.Role == "user":
			for _, t := range contentTexts(it.Content) {
				c.noteText(t)
			}
			c.addPrompt(contentTexts(it.Content))
		case it.Type == "function_call" || it.Type == "custom_tool_call" || it.Type == "local_shell_call":
			c.callsSincePrompt++
		case strings.HasSuffix(it.Type, "_call_output") && i == len(items)-1:
			c.endWithToolResult(contentTexts(it.Output))
		}
	}
	return c
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request, rec Request) {
	var req responsesRequest
	rep, u, id, ok := s.turn(w, r, rec, &req, openAIErrors)
	if !ok {
		return
	}
	respID := fakeID("resp_", id)
	var item map[string]any
	switch {
	case rep.custom:
		item = map[string]any{"type": "custom_tool_call", "id": fakeID("ctc_", id),
			"call_id": fakeID("call_", id), "name": rep.tool, "input": rep.args, "status": "completed"}
	case rep.tool != "":
		name, namespace := rep.tool, ""
		if i := strings.IndexByte(name, 0); i >= 0 {
			namespace, name = name[:i], name[i+1:]
		}
		item = map[string]any{"type": "function_call", "id": fakeID("fc_", id),
			"call_id": fakeID("call_", id), "name": name, "arguments": rep.args, "status": "completed"}
		if namespace != "" {
			item["namespace"] = namespace
		}
	default:
		item = map[string]any{"type": "message", "id": fakeID("msg_", id), "role": "assistant",
			"status": "completed", "content": []any{map[string]any{"type": "output_text", "text": rep.text, "annotations": []any{}}}}
	}
	usage := map[string]any{"input_tokens": u.openAIInput(), "output_tokens": u.Output, "total_tokens": u.openAIInput() + u.Output,
		"input_tokens_details": map[string]any{"cached_tokens": u.CacheRead}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	response := map[string]any{"id": respID, "object": "response", "model": req.Model, "status": "completed",
		"output": []any{item}, "usage": usage}
	if !req.Stream {
		writeJSON(w, response)
		return
	}
	sse := newSSE(w)
	sse.event("response.created", map[string]any{"type": "response.created", "sequence_number": 0,
		"response": map[string]any{"id": respID, "object": "response", "model": req.Model, "status": "in_progress", "output": []any{}}})
	added := maps.Clone(item)
	added["status"] = "in_progress"
	switch {
	case rep.custom:
		added["input"] = ""
	case rep.tool == "":
		added["content"] = []any{}
	default:
		added["arguments"] = ""
	}
	sse.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 1,
		"output_index": 0, "item": added})
	if rep.tool == "" {
		sse.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "sequence_number": 1,
			"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": rep.text})
	}
	sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 2,
		"output_index": 0, "item": item})
	sse.event("response.completed", map[string]any{"type": "response.completed", "sequence_number": 3, "response": response})
}

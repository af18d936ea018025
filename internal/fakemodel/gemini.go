package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"
)

// The Gemini API (generativelanguage.googleapis.com), as Gemini CLI speaks
// it at GOOGLE_GEMINI_BASE_URL:
//
//	POST /v1beta/models/<model>:generateContent
//	POST /v1beta/models/<model>:streamGenerateContent?alt=sse
//	POST /v1beta/models/<model>:countTokens
//
// A conversation is "contents", each {role: user|model, parts}; a part is
// {text}, {functionCall: {name, args}} or {functionResponse: {name,
// response}}. Tools are function declarations.

type geminiPart struct {
	Text         string `json:"text"`
	Thought      bool   `json:"thought"`
	FunctionCall *struct {
		Name string `json:"name"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

type geminiRequest struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []geminiPart `json:"parts"`
	} `json:"systemInstruction"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

// geminiInjected are the starts of the user texts Gemini CLI writes itself
// (its session context), which are not prompts.
var geminiInjected = []string{
	"This is the Gemini CLI. We are setting up the context for our chat.",
	"<session_context>",
}

func (req geminiRequest) conversation() conversation {
	var c conversation
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			c.tools = append(c.tools, f.Name)
		}
	}
	if si := req.SystemInstruction; si != nil {
		for _, p := range si.Parts {
			c.noteText(p.Text)
		}
	}
	for i, m := range req.Contents {
		var texts, results []string
		calls := 0
		for _, p := range m.Parts {
			switch {
			case p.FunctionCall != nil:
				calls++
			case p.FunctionResponse != nil:
				results = append(results, functionResponseText(p.FunctionResponse.Response))
			case p.Text != "" && !p.Thought:
				texts = append(texts, p.Text)
			}
		}
		switch m.Role {
		case "model":
			c.callsSincePrompt += calls
		default:
			if len(results) > 0 {
				if i == len(req.Contents)-1 {
					c.endWithToolResult(results)
				}
				continue
			}
			var typed []string
			for _, t := range texts {
				c.noteText(t)
				if !geminiContext(t) {
					typed = append(typed, t)
				}
			}
			c.addPrompt(typed)
		}
	}
	return c
}

// geminiContext reports whether a user text is the CLI's own context.
func geminiContext(t string) bool {
	t = strings.TrimSpace(t)
	for _, p := range geminiInjected {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// functionResponseText is the text of a function response: its "output"
// or "error" when it has one, else its JSON.
func functionResponseText(raw json.RawMessage) string {
	var r struct {
		Output any `json:"output"`
		Error  any `json:"error"`
	}
	if json.Unmarshal(raw, &r) == nil {
		for _, v := range []any{r.Output, r.Error} {
			if s, ok := v.(string); ok && s != "" {
				return s
			}
		}
	}
	return string(raw)
}

var geminiErrors = wireErrors{
	badJSON: `{"error":{"code":400,"message":"bad json","status":"INVALID_ARGUMENT"}}`,
	onCue:   `{"error":{"code":%[1]d,"message":"fake model: HTTP %[1]d on cue","status":"INVALID_ARGUMENT"}}`,
}

// gemini answers one request of the Gemini API; method is what follows
// the model name's colon.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request, rec Request, method string) {
	if method == "countTokens" {
		s.record(rec)
		writeJSON(w, map[string]any{"totalTokens": 1 + len(rec.Body)/4})
		return
	}
	var req geminiRequest
	rep, u, id, ok := s.turn(w, r, rec, &req, geminiErrors)
	if !ok {
		return
	}
	part := map[string]any{"text": rep.text}
	if rep.tool != "" {
		var args map[string]any
		_ = json.Unmarshal([]byte(rep.args), &args)
		part = map[string]any{"functionCall": map[string]any{"name": rep.tool, "args": args}}
	}
	usage := map[string]any{
		"promptTokenCount":     u.openAIInput(),
		"candidatesTokenCount": u.Output,
		"totalTokenCount":      u.openAIInput() + u.Output,
	}
	if u.CacheRead > 0 {
		usage["cachedContentTokenCount"] = u.CacheRead
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0,
		}},
		"usageMetadata": usage,
		"modelVersion":  modelOf(r.URL.Path),
		"responseId":    fakeID("resp_", id),
	}
	if method != "streamGenerateContent" {
		writeJSON(w, resp)
		return
	}
	sse := newSSE(w)
	sse.event("", resp)
}

// geminiMethod splits a Gemini API path into its method ("generateContent",
// ...), or "" when the path is not one.
func geminiMethod(path string) string {
	i := strings.LastIndex(path, ":")
	if i < 0 || !strings.Contains(path[:i], "/models/") {
		return ""
	}
	return path[i+1:]
}

// modelOf is the model a Gemini API path names.
func modelOf(path string) string {
	i := strings.Index(path, "/models/")
	if i < 0 {
		return ""
	}
	m, _, _ := strings.Cut(path[i+len("/models/"):], ":")
	return m
}

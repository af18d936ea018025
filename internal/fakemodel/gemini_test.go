package fakemodel

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Gemini API: memory across contents, the CLI's own session context
// ignored, usage with cached tokens inside the prompt count, SSE streaming,
// file tools and errors on cue.
func TestGeminiMemoryStreamAndTools(t *testing.T) {
	s := start(t)
	conv := `{"contents":[
		{"role":"user","parts":[{"text":"<session_context>\nThis is the Gemini CLI.\n- **Workspace Directories:**\n  - /w\n</session_context>"}]},
		{"role":"user","parts":[{"text":"alpha\n"}]},
		{"role":"model","parts":[{"text":"turn 1: alpha"}]},
		{"role":"user","parts":[{"text":"beta"}]}]}`
	resp, body := post(t, s.URL()+"/v1beta/models/m1:generateContent", conv)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var r struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         string
					FunctionCall *struct {
						Name string
						Args map[string]any
					}
				}
			}
		}
		UsageMetadata map[string]int
	}
	require.NoError(t, json.Unmarshal([]byte(body), &r))
	assert.Equal(t, "turn 2: alpha | beta", r.Candidates[0].Content.Parts[0].Text)
	assert.Equal(t, map[string]int{"promptTokenCount": 1040, "candidatesTokenCount": 10, "totalTokenCount": 1050,
		"cachedContentTokenCount": 1000}, r.UsageMetadata)
	assert.Equal(t, Gemini, s.Turns()[0].API)

	_, body = post(t, s.URL()+"/v1beta/models/m1:streamGenerateContent?alt=sse", `{"contents":[
		{"role":"user","parts":[{"text":"<session_context>\n- **Workspace Directories:**\n  - /w\n</session_context>"}]},
		{"role":"user","parts":[{"text":"WRITE_FILE: a.txt\nx\nEND_FILE"}]}],
		"tools":[{"functionDeclarations":[{"name":"read_file"},{"name":"write_file"},{"name":"replace"}]}]}`)
	evs := sseData(t, body)
	require.Len(t, evs, 1)
	part := evs[0]["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"name": "write_file", "args": map[string]any{"file_path": "/w/a.txt", "content": "x\n"}}, part["functionCall"])

	_, body = post(t, s.URL()+"/v1beta/models/m1:streamGenerateContent?alt=sse", `{"contents":[
		{"role":"user","parts":[{"text":"WRITE_FILE: a.txt\nx\nEND_FILE"}]},
		{"role":"model","parts":[{"functionCall":{"name":"write_file","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"write_file","response":{"output":"written"}}}]}],
		"tools":[{"functionDeclarations":[{"name":"write_file"}]}]}`)
	last := s.Turns()[len(s.Turns())-1]
	assert.True(t, last.AfterToolResult)
	assert.Equal(t, "written", last.ToolResult)
	assert.Equal(t, "turn 1: WRITE_FILE: a.txt\nx\nEND_FILE", last.Reply, "after the last tool result it answers normally")
	assert.NotEmpty(t, sseData(t, body))

	resp, body = post(t, s.URL()+"/v1beta/models/m1:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"HTTP_ERROR: 429"}]}]}`)
	assert.Equal(t, 429, resp.StatusCode)
	assert.Contains(t, body, `"code":429`)

	_, body = post(t, s.URL()+"/v1beta/models/m1:countTokens", `{"contents":[]}`)
	assert.Contains(t, body, "totalTokens")
}

package fakemodel

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const cuePrompt = "go\nWRITE_FILE: a.txt\none\n  two\nEND_FILE\nEDIT_FILE@2: b.go\nOLD:\nx := 1\nNEW:\nx := 2\ny := 3\nEND_EDIT\nWRITE_FILE: unterminated\nno end"

func TestFileCuesParse(t *testing.T) {
	cs := fileCues(cuePrompt, 1)
	require.Len(t, cs, 2, "a cue without its end marker is not a cue")
	assert.Equal(t, fileCue{path: "a.txt", content: "one\n  two\n", turn: 1}, cs[0])
	assert.Equal(t, fileCue{edit: true, path: "b.go", old: "x := 1", new: "x := 2\ny := 3", turn: 2}, cs[1])
}

func names(plan []toolCall) []string {
	var out []string
	for _, c := range plan {
		out = append(out, c.name)
	}
	return out
}

func TestFilePlanPerCLIAndTurn(t *testing.T) {
	claude := conversation{prompts: []string{cuePrompt}, tools: []string{"Bash", "Read", "Write", "Edit"}, cwd: "/w"}
	plan := claude.filePlan()
	assert.Equal(t, []string{"Read", "Write"}, names(plan), "turn 1 runs only the turn-1 cue, after reading the file")
	assert.JSONEq(t, `{"file_path":"/w/a.txt","content":"one\n  two\n"}`, plan[1].args)

	claude.prompts = append(claude.prompts, "again")
	plan = claude.filePlan()
	assert.Equal(t, []string{"Read", "Edit"}, names(plan), "turn 2 runs the @2 cue of the first prompt")
	assert.JSONEq(t, `{"file_path":"/w/b.go","old_string":"x := 1","new_string":"x := 2\ny := 3"}`, plan[1].args)

	pi := conversation{prompts: []string{cuePrompt, "again"}, tools: []string{"read", "write", "edit"}}
	plan = pi.filePlan()
	assert.Equal(t, []string{"edit"}, names(plan))
	assert.JSONEq(t, `{"path":"b.go","edits":[{"oldText":"x := 1","newText":"x := 2\ny := 3"}]}`, plan[0].args)

	readOnly := conversation{prompts: []string{cuePrompt}, tools: []string{"read", "ls"}}
	assert.Empty(t, readOnly.filePlan(), "no file tool offered, no call")

	codex := conversation{prompts: []string{cuePrompt}, tools: []string{"exec_command"}}
	plan = codex.filePlan()
	require.Len(t, plan, 1)
	var args struct{ Cmd string }
	require.NoError(t, json.Unmarshal([]byte(plan[0].args), &args))
	assert.Equal(t, "apply_patch <<'TETHER_EOF'\n*** Begin Patch\n*** Add File: a.txt\n+one\n+  two\n*** End Patch\nTETHER_EOF", args.Cmd)

	custom := conversation{prompts: []string{cuePrompt, "again"}, tools: []string{"apply_patch"}, customTools: map[string]bool{"apply_patch": true}}
	plan = custom.filePlan()
	require.Len(t, plan, 1)
	assert.True(t, plan[0].custom)
	assert.Equal(t, "*** Begin Patch\n*** Update File: b.go\n@@\n-x := 1\n+x := 2\n+y := 3\n*** End Patch", plan[0].args)
}

// One call per response, then the normal final text; the progress is
// counted from the tool calls since the latest prompt.
func TestFileCuesOverTheWire(t *testing.T) {
	s := start(t)
	prompt, _ := json.Marshal("go\nWRITE_FILE: a.txt\nhi\nEND_FILE\nWRITE_FILE: b.txt\nho\nEND_FILE")
	tools := `"tools":[{"type":"function","function":{"name":"write"}}]`
	_, body := post(t, s.URL()+"/v1/chat/completions", `{"model":"m",`+tools+`,"messages":[{"role":"user","content":`+string(prompt)+`}]}`)
	assert.Contains(t, body, `\"path\":\"a.txt\"`)
	_, body = post(t, s.URL()+"/v1/chat/completions", `{"model":"m",`+tools+`,"messages":[{"role":"user","content":`+string(prompt)+`},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"write","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"ok"}]}`)
	assert.Contains(t, body, `\"path\":\"b.txt\"`)
	_, body = post(t, s.URL()+"/v1/chat/completions", `{"model":"m",`+tools+`,"messages":[{"role":"user","content":`+string(prompt)+`},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"write","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"ok"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c2","type":"function","function":{"name":"write","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c2","content":"ok 2"}]}`)
	assert.Contains(t, body, `"content":"turn 1: go\nWRITE_FILE`)
	assert.Equal(t, "ok 2", s.Turns()[2].ToolResult)

	_, body = post(t, s.URL()+"/v1/responses", `{"model":"m","stream":true,"tools":[{"type":"custom","name":"apply_patch"}],
		"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":`+string(prompt)+`}]}]}`)
	var done map[string]any
	for _, e := range sseData(t, body) {
		if e["type"] == "response.output_item.done" {
			done = e["item"].(map[string]any)
		}
	}
	require.NotNil(t, done)
	assert.Equal(t, "custom_tool_call", done["type"])
	assert.Equal(t, "apply_patch", done["name"])
	assert.Contains(t, done["input"], "*** Add File: a.txt\n+hi\n")
}

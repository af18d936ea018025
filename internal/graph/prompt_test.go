package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderPrompt(t *testing.T) {
	tmpl := `Write about {{.input.topic}} (visit {{.visit}}).
{{- with index .input "feedback"}} Feedback: {{.}}.{{end}}
{{- if .output}} Last time you wrote: {{.output.text}}{{end}}`

	first, err := RenderPrompt(tmpl, PromptData{Input: map[string]any{"topic": "Go"}, Visit: 1})
	require.NoError(t, err)
	assert.Equal(t, "Write about Go (visit 1).", first)

	second, err := RenderPrompt(tmpl, PromptData{
		Input:  map[string]any{"topic": "Go", "feedback": "shorter"},
		Output: map[string]any{"text": "draft v1"},
		Visit:  2,
	})
	require.NoError(t, err)
	assert.Equal(t, "Write about Go (visit 2). Feedback: shorter. Last time you wrote: draft v1", second)
}

func TestRenderPromptJSONAndRange(t *testing.T) {
	out, err := RenderPrompt(`{{json .output}}|{{range $k, $v := .input}}{{$k}}={{$v}};{{end}}`, PromptData{
		Input:  map[string]any{"b": 2, "a": 1},
		Output: map[string]any{"z": true, "y": []any{1}},
	})
	require.NoError(t, err)
	assert.Equal(t, `{"y":[1],"z":true}|a=1;b=2;`, out)
}

func TestRenderPromptMissingKeyIsAnError(t *testing.T) {
	_, err := RenderPrompt("about {{.input.topic}}", PromptData{})
	assert.ErrorContains(t, err, `map has no entry for key "topic"`)
}

func TestCheckPrompt(t *testing.T) {
	good := []string{
		"",
		"plain text",
		"{{.input.topic}} {{.output.text}} {{.visit}}",
		"{{with .input.x}}{{.Anything}}{{end}}",
		"{{range .input.list}}{{.Name}}{{else}}{{.visit}}{{end}}",
		"{{with .input.x}}{{$.input.y}}{{end}}",
		"{{$x := .input}}{{$x.Whatever}}",
		"{{json .output}}",
	}
	for _, src := range good {
		assert.NoError(t, CheckPrompt(src), src)
	}
	bad := map[string]string{
		"{{.Input.topic}}":                        "refers to .Input.topic",
		"{{.Visit}}":                              "refers to .Visit",
		"{{with .input.x}}{{$.Output}}{{end}}":    "refers to $.Output",
		"{{range .input.l}}{{end}}{{.prev}}":      "refers to .prev",
		"{{if .input}}{{else}}{{.turn}}{{end}}":   "refers to .turn",
		"{{with .input}}{{else}}{{.nope}}{{end}}": "refers to .nope",
		"{{.input.x":                              "unclosed action",
		"{{upper .input.x}}":                      `function "upper" not defined`,
		"{{if .visit}}":                           "unexpected EOF",
	}
	for src, want := range bad {
		assert.ErrorContains(t, CheckPrompt(src), want, src)
	}
}

package graph

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tether-run/tether/internal/agent"
)

const settingsGraph = `name: fix
start: fixer
workspace:
  from: "{{.input.repo}}"
  ref: main
nodes:
  - id: fixer
    kind: agent
    backend: claude_code
    session: persist
    prompt: "Fix the test. Changes so far: {{.workspace.diff}}"
    permissions: edit
    tools: [Read, Edit, Write, Bash]
    disallowed_tools: [WebFetch]
    system_prompt: You fix Go tests.
    append_system_prompt: Keep changes small.
    ask_user: false
    env: [GOPROXY, GOFLAGS]
    timeout: 10m
  - id: test
    kind: tool
    run: [go, test, ./...]
    env: [GOPROXY]
    timeout: 5m
  - id: done
    kind: end
edges:
  - {from: fixer, to: test}
  - {from: test, to: done}
`

func TestSettingsParseValidateAndRoundTrip(t *testing.T) {
	g := mustParse(t, settingsGraph)
	assert.Empty(t, Validate(g).String())
	require.NotNil(t, g.Workspace)
	assert.Equal(t, WorkspaceSource{From: "{{.input.repo}}", Ref: "main"}, *g.Workspace)
	fixer, _ := g.Node("fixer")
	assert.Equal(t, agent.Settings{
		Permissions:        agent.PermissionEdit,
		Tools:              []string{"Read", "Edit", "Write", "Bash"},
		DisallowedTools:    []string{"WebFetch"},
		SystemPrompt:       "You fix Go tests.",
		AppendSystemPrompt: "Keep changes small.",
		NoAskUser:          true,
		Env:                []string{"GOPROXY", "GOFLAGS"},
		Timeout:            10 * time.Minute,
	}, fixer.AgentSettings())
	roundTrip(t, g)
	out, err := Encode(g)
	require.NoError(t, err)
	assert.Contains(t, string(out), "workspace:\n  from: '{{.input.repo}}'\n  ref: main\n")
}

func TestWorkspaceUnknownFieldIsAParseError(t *testing.T) {
	_, err := Parse([]byte("start: a\nworkspace:\n  form: x\nnodes: [{id: a, kind: end}]\n"), "w.yaml")
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	require.Len(t, pe.Problems, 1)
	assert.Equal(t, CodeUnknownField, pe.Problems[0].Code)
	assert.Equal(t, Pos{Line: 3, Column: 3}, pe.Problems[0].Pos)
	assert.Contains(t, pe.Problems[0].Message, `did you mean "from"?`)
}

func TestSettingsProblems(t *testing.T) {
	src := `start: a
workspace:
  ref: "{{.input.ref"
nodes:
  - id: a
    kind: agent
    backend: codex
    fallback: [pi]
    permissions: write
    tools: [shell]
    env: [GOOD_1, "SECRET=x", 1BAD]
  - id: b
    kind: agent
    backend: claude_code
    fallback: [codex, kimi]
    disallowed_tools: [Bash]
    system_prompt: be brief
  - id: t
    kind: tool
    run: ["true"]
    permissions: read-only
    env: [bad-name]
  - id: h
    kind: human
    question: ok?
    env: [X]
  - id: done
    kind: end
edges:
  - {from: a, to: b}
  - {from: b, to: t}
  - {from: t, to: h}
  - {from: h, to: done}
`
	ps := Validate(mustParse(t, src))
	assert.Equal(t, []string{
		"3:3 G045 ",
		"3:8 G022 ",
		"9:18 G042 a",
		"10:12 G044 a",
		"11:10 G043 a",
		"11:10 G043 a",
		"15:15 G046 b",
		"16:23 G044 b",
		"16:23 G044 b",
		"17:20 G044 b",
		"21:18 G036 t",
		"22:10 G043 t",
		"26:10 G036 h",
	}, brief(ps))
	msgs := ps.String()
	assert.Contains(t, msgs, `agent node a has permissions "write"; use one of read-only, edit, full`)
	assert.Contains(t, msgs, "agent node a sets tools, but its backend codex cannot honour it")
	assert.Contains(t, msgs, "run the node on a backend that can: scripted, claude_code, pi")
	assert.Contains(t, msgs, "agent node b sets disallowed_tools, but its fallback backend codex cannot honour it")
	assert.Contains(t, msgs, "agent node b sets system_prompt, but its fallback backend kimi cannot honour it")
	assert.Contains(t, msgs, `write only the name "SECRET": the value is the worker's own, never written in the graph`)
	assert.Contains(t, msgs, "test.yaml:3:3: G045 error: workspace has no from")
	assert.Contains(t, msgs, "permissions has no effect on tool node t (it belongs to agent nodes)")
	assert.Contains(t, msgs, "env has no effect on human node h (it belongs to agent/tool nodes)")
}

func TestAskUserBelongsToAgents(t *testing.T) {
	g := mustParse(t, "start: a\nnodes:\n  - {id: a, kind: agent, backend: codex, ask_user: true}\n  - {id: t, kind: tool, run: [\"true\"], ask_user: false}\n  - {id: e, kind: end}\nedges: [{from: a, to: t}, {from: t, to: e}]\n")
	a, _ := g.Node("a")
	assert.False(t, a.AgentSettings().NoAskUser, "ask_user: true is the default")
	assert.Equal(t, []string{"4:50 G036 t"}, brief(Validate(g)))
	assert.Contains(t, Validate(g).String(), "ask_user has no effect on tool node t (it belongs to agent nodes)")

	_, err := Parse([]byte("start: a\nnodes:\n  - {id: a, kind: agent, ask_user: never}\n"), "g.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "write true or false")
}

func TestTimeoutAndEnvBelongToAgentsToo(t *testing.T) {
	g := mustParse(t, "start: a\nnodes:\n  - {id: a, kind: agent, backend: codex, timeout: 1m, env: [A], permissions: full, system_prompt: x, append_system_prompt: y}\n  - {id: e, kind: end}\nedges: [{from: a, to: e}]\n")
	assert.Empty(t, Validate(g).String())
}

func TestWorkspaceTemplates(t *testing.T) {
	require.NoError(t, CheckPrompt("{{.workspace.diff}} {{.workspace.commit}} {{.workspace.base}}"))
	out, err := RenderPrompt("diff:{{.workspace.diff}}", PromptData{Workspace: map[string]any{"diff": "+x"}})
	require.NoError(t, err)
	assert.Equal(t, "diff:+x", out)
	out, err = RenderPrompt(`{{with index .workspace "diff"}}{{.}}{{else}}none{{end}}`, PromptData{})
	require.NoError(t, err)
	assert.Equal(t, "none", out, "no workspace data is an empty mapping")
	err = CheckPrompt("{{.Workspace}}")
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), ".workspace (the run's workspace"), err.Error())
}

func TestSettingsGraphMatchesSchema(t *testing.T) {
	sch, _ := loadSchema(t)
	assert.NoError(t, sch.Validate(yamlInstance(t, []byte(settingsGraph))))
	out, err := Encode(mustParse(t, settingsGraph))
	require.NoError(t, err)
	assert.NoError(t, sch.Validate(yamlInstance(t, out)))
}

func TestBudgetProblems(t *testing.T) {
	g, err := Parse([]byte(`
name: b
start: a
budget: {max_cost_usd: 5}
nodes:
  - {id: a, kind: agent, backend: codex, prompt: x, budget: {max_cost_usd: 1}}
  - {id: b, kind: agent, backend: scripted, prompt: x, budget: {max_tokens: -3}}
  - {id: c, kind: agent, backend: scripted, prompt: x, budget: {}}
  - {id: t, kind: tool, run: ["true"], budget: {max_tokens: 9}}
  - {id: done, kind: end}
edges:
  - {from: a, to: b}
  - {from: b, to: c}
  - {from: c, to: t}
  - {from: t, to: done}
`), "b.yaml")
	require.NoError(t, err)
	var got []string
	for _, p := range Validate(g) {
		got = append(got, p.Pos.String()+" "+p.Code+" "+p.Node)
	}
	assert.Equal(t, []string{
		"4:24 G048 ",
		"6:76 G048 a",
		"7:64 G047 b",
		"8:64 G047 c",
		"9:48 G036 t",
	}, got)
	// A run budget round-trips.
	g2, err := Parse([]byte("name: ok\nstart: a\nbudget: {max_cost_usd: 2.5, max_tokens: 100000}\nnodes:\n  - {id: a, kind: agent, backend: scripted, budget: {max_tokens: 10}}\n  - {id: e, kind: end}\nedges:\n  - {from: a, to: e}\n"), "ok.yaml")
	require.NoError(t, err)
	assert.False(t, Validate(g2).HasErrors(), Validate(g2).String())
	assert.Equal(t, &Budget{MaxCostUSD: 2.5, MaxTokens: 100000}, g2.Budget)
	assert.Equal(t, &Budget{MaxTokens: 10}, g2.Nodes[0].Budget)
}

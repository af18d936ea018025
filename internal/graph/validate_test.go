package graph

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustParse(t *testing.T, src string) *Graph {
	t.Helper()
	g, err := Parse([]byte(src), "test.yaml")
	require.NoError(t, err)
	return g
}

// brief renders problems as "line:col CODE node" for compact comparison.
func brief(ps Problems) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%s %s %s", p.Pos, p.Code, p.Node)
	}
	return out
}

func TestValidateBrokenReportsEveryProblemWithPosition(t *testing.T) {
	g, err := ParseFile("testdata/broken.yaml")
	require.NoError(t, err)
	ps := Validate(g)
	assert.Equal(t, []string{
		"7:11 G039 ",
		"8:5 G038 ",
		"15:17 G028 writer",
		"16:13 G022 writer",
		"17:9 G013 writer",
		"20:5 G012 ",
		"20:5 G026 ",
		"22:11 G014 judge",
		"23:5 G027 ask",
		"25:14 G036 ask",
		"26:5 G023 coder",
		"30:14 G024 critic",
		"31:15 G025 critic",
		"34:14 G046 kimi_writer",
		"39:13 G030 spread",
		"43:14 G029 fan",
		"48:14 G031 branch_a",
		"52:5 G033 meet",
		"54:5 G017 orphan",
		"57:5 G018 sink",
		"60:5 G034 stop",
		"67:9 G016 ghost",
		"69:11 G015 nobody",
		"73:11 G020 writer",
		"78:13 G021 writer",
		"82:5 G037 writer",
		"88:11 G057 ask",
		"109:5 G035 stop",
	}, brief(ps))
	assert.True(t, ps.HasErrors())
	assert.Len(t, ps.Warnings(), 2)
	for _, p := range ps {
		assert.Equal(t, "testdata/broken.yaml", p.File)
		assert.Equal(t, severityOf(p.Code), p.Severity, p.Code)
		assert.NotEmpty(t, p.Message)
	}
	lines := strings.Split(ps.String(), "\n")
	assert.Equal(t, "testdata/broken.yaml:7:11: G039 error: input \"topic\" is declared twice (first as input #1); remove or rename one", lines[0])
	assert.Contains(t, ps.String(), "testdata/broken.yaml:34:14: G046 error: agent node kimi_writer has backend kimi, which this build of Tether cannot run")
	assert.Contains(t, ps.String(), `unknown kind "agnet"; did you mean "agent"?`)
	require.Error(t, ps.Err())
	var ve *ValidationError
	require.ErrorAs(t, ps.Err(), &ve)
	assert.Equal(t, ps, ve.Problems)
}

func TestValidateExamplesAreClean(t *testing.T) {
	for _, path := range examplePaths(t) {
		t.Run(path, func(t *testing.T) {
			g, err := ParseFile(path)
			require.NoError(t, err)
			ps := Validate(g)
			assert.Empty(t, ps, ps.String())
			assert.NoError(t, ps.Err())
		})
	}
}

const okGraph = `
name: ok
start: a
nodes:
  - id: a
    kind: agent
    backend: scripted
  - id: done
    kind: end
edges:
  - from: a
    to: done
`

// Each case is a small graph and the one problem code it must raise; with
// broken.yaml, together they cover every validation code.
func TestValidateCodes(t *testing.T) {
	cases := []struct {
		name, code, src string
		pos             string
	}{
		{"missing start", CodeMissingStart, "", "2:1"},
		{"persist on grok", CodePersistNoCapability, "", "8:14"},
		{"unknown start", CodeUnknownStart, strings.Replace(okGraph, "start: a", "start: b", 1), "3:8"},
		{"no end", CodeNoEnd, "", "4:3"},
		{"join on a sequential path", CodeJoinWithoutFanout, "", "7:5"},
		{"fanout branch ends without join", CodeBranchNoJoin, "", "6:5"},
		{"persist after a nested join is still in the outer branch", CodePersistInBranch, "", "9:54"},
		{"session on a tool", CodeIgnoredField, "", "4:47"},
		{"script on a real backend", CodeIgnoredField, "", "7:13"},
		{"edge without from", CodeUnknownEdgeFrom, okGraph + "  - to: a\n", "13:5"},
		{"disabled builtin", CodeBadWhen, okGraph + "    when: now() > 0\n", "13:11"},
		{"a when that is a value an agent writes", CodeUncheckedWhen, okGraph + "    when: output.approved\n", "13:11"},
		{"a when that fails on a scripted reply", CodeScriptedWhen, "", "13:11"},
		{"keys is disabled", CodeBadWith, okGraph + "    with: {k: keys(output)}\n", "13:15"},
		{"missing id on a join", CodeMissingID, "", "5:5"},
		{"missing kind", CodeUnknownKind, "", "4:5"},
		{"prompt syntax", CodeBadPrompt, "", "7:13"},
		{"unknown function in prompt", CodeBadPrompt, "", "7:13"},
		{"bad question template", CodeBadPrompt, "", "4:36"},
		{"bad run argument template", CodeBadPrompt, "", "4:30"},
		{"a tool's exit code compared with a string", CodeTypeMismatch, "", "8:31"},
		{"a human's answer read as a field it does not have", CodeTypeMismatch, "", "7:41"},
		{"a prompt reads an input its first visit is not given", CodeInputNotDelivered, "", "6:5"},
		{"an input's default not of its type", CodeBadInputType, "", "4:30"},
		{"node id outside the safe alphabet", CodeBadID, "", "4:10"},
		{"branches meet at different joins", CodeJoinsDiffer, "", "4:5"},
	}
	graphs := graphDocuments(t, "testdata/codes.yaml")
	for _, c := range cases {
		if c.src == "" {
			src, ok := graphs[c.name]
			require.True(t, ok, "testdata/codes.yaml has no graph for %q", c.name)
			c.src = src
			delete(graphs, c.name)
		}
		t.Run(c.name, func(t *testing.T) {
			ps := Validate(mustParse(t, c.src))
			var got []string
			for _, p := range ps {
				got = append(got, p.Code)
			}
			require.Equal(t, []string{c.code}, got, ps.String())
			assert.Equal(t, c.pos, ps[0].Pos.String(), ps.String())
		})
	}
	assert.Empty(t, graphs, "graphs in testdata/codes.yaml no case reads")
}

func TestValidateNoProblemsForLoopsAndFanout(t *testing.T) {
	// A loop through a fan-out and its join, and a join that also fans out.
	g, err := ParseFile("testdata/loops-and-fanout.yaml")
	require.NoError(t, err)
	assert.Empty(t, Validate(g).String())
}

func TestValidateGraphBuiltInCode(t *testing.T) {
	g := &Graph{
		Start: "a",
		Nodes: []Node{{ID: "a", Kind: KindAgent, Backend: "nope"}, {ID: "z", Kind: KindEnd}},
		Edges: []Edge{{From: "a", To: "z"}},
	}
	ps := Validate(g)
	require.Len(t, ps, 1)
	assert.Equal(t, CodeUnknownBackend, ps[0].Code)
	assert.True(t, ps[0].Pos.IsZero())
	assert.True(t, strings.HasPrefix(ps[0].String(), "graph: G024 error: "), ps[0].String())
}

func TestValidateNil(t *testing.T) {
	ps := Validate(nil)
	require.Len(t, ps, 1)
	assert.Equal(t, CodeNotAGraph, ps[0].Code)
}

func TestEveryCodeIsExercised(t *testing.T) {
	// Codes raised by broken.yaml, the table above and the parse tests.
	seen := map[string]bool{}
	g, err := ParseFile("testdata/broken.yaml")
	require.NoError(t, err)
	for _, p := range Validate(g) {
		seen[p.Code] = true
	}
	for _, c := range []string{CodeMissingStart, CodeUnknownStart, CodeNoEnd, CodeJoinWithoutFanout, CodeBranchNoJoin, CodePersistInBranch, CodeIgnoredField, CodeUnknownEdgeFrom, CodeBadWhen, CodeBadWith, CodeMissingID, CodeUnknownKind, CodeBadPrompt, CodeJoinsDiffer, CodeBadID,
		CodeBadPermissions, CodeBadEnvName, CodeUnsupported, CodeBadWorkspace, CodeBadBudget, CodeCostNotReported, CodePersistNoCapability,
		CodeBadJoinWorkspace, CodeMissingPick, CodeBadPick, CodeUnknownPickOutput, CodeTooManyBranches,
		CodeBadNetwork, CodeBadAllow, CodeBadLimits,
		CodeTypeMismatch, CodeInputNotDelivered, CodeBadInputType,

		CodeBadNotifyEvent, CodeBadNotifyTo, CodeBadOptions,
		CodeBadPublish, CodeReviewNoPublish, CodeReviewInBranch,
		CodeProgramClimbs, CodeBadWorkdir, CodeUncheckedWhen, CodeScriptedWhen} {
		seen[c] = true
	}
	for _, c := range parseCodesTested {
		seen[c] = true
	}
	for _, c := range Codes() {
		assert.True(t, seen[c.Code], "no test raises %s (%s)", c.Code, c.Summary)
	}
}

func TestCodesAreUniqueAndOrdered(t *testing.T) {
	prev := ""
	for _, c := range Codes() {
		assert.Greater(t, c.Code, prev)
		assert.NotEmpty(t, c.Summary)
		prev = c.Code
	}
}

// TestTooManyBranches: a fan-out over more edges than MaxBranches is an
// error before the run starts, not half-way through it.
func TestTooManyBranches(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: wide\nstart: plan\nnodes:\n  - {id: plan, kind: tool, fanout: all, run: [true]}\n  - {id: gather, kind: join}\n  - {id: done, kind: end}\n")
	var edges strings.Builder
	for i := range MaxBranches + 1 {
		fmt.Fprintf(&b, "  - {id: w%d, kind: tool, run: [true]}\n", i)
		fmt.Fprintf(&edges, "  - {from: plan, to: w%[1]d}\n  - {from: w%[1]d, to: gather}\n", i)
	}
	b.WriteString("edges:\n" + edges.String() + "  - {from: gather, to: done}\n")
	g, err := Parse([]byte(b.String()), "wide.yaml")
	require.NoError(t, err)
	ps := Validate(g)
	require.True(t, ps.HasErrors(), ps.String())
	require.Equal(t, CodeTooManyBranches, ps[0].Code, ps.String())
	assert.Contains(t, ps[0].Message, "fans out on 17 edges")
	assert.Equal(t, 4, ps[0].Pos.Line)
}

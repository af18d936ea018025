package graph

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// joinGraph is a fan-out into fix_a and fix_b, each ending in its own test
// node, meeting at gather; ws is gather's workspace lines (indented by 4).
// gather's workspace: key is on line 13.
func joinGraph(ws string) string {
	return `start: plan
nodes:
  - {id: plan, kind: tool, run: [echo], fanout: all}
  - {id: fix_a, kind: agent, backend: scripted}
  - {id: fix_b, kind: agent, backend: scripted}
  - {id: test_a, kind: tool, run: [go, test, ./...]}
  - {id: test_b, kind: tool, run: [go, test, ./...]}
  - {id: done, kind: end}
  - {id: resolve, kind: agent, backend: scripted}
  - id: gather
    kind: join
    max_visits: 1
` + ws + `
edges:
  - {from: plan, to: fix_a}
  - {from: plan, to: fix_b}
  - {from: fix_a, to: test_a}
  - {from: fix_b, to: test_b}
  - {from: test_a, to: gather}
  - {from: test_b, to: gather}
  - {from: gather, to: resolve, when: len(output.workspace.conflicts) > 0}
  - {from: gather, to: done}
  - {from: resolve, to: done}
`
}

func TestJoinWorkspaceForms(t *testing.T) {
	cases := []struct {
		name, ws string
		want     *JoinWorkspace
		json     string
	}{
		{"absent", "", nil, ``},
		{"null", "    workspace: ~", nil, ``},
		{"trunk", "    workspace: trunk", &JoinWorkspace{Mode: JoinTrunk}, `"trunk"`},
		{"merge", "    workspace: merge", &JoinWorkspace{Mode: JoinMerge}, `"merge"`},
		{"pick", "    workspace:\n      pick: outputs.test_a.exit_code == 0 || outputs.test_b.exit_code == 0",
			&JoinWorkspace{Mode: JoinPick, Pick: "outputs.test_a.exit_code == 0 || outputs.test_b.exit_code == 0"},
			`{"pick":"outputs.test_a.exit_code == 0 || outputs.test_b.exit_code == 0"}`},
		{"pick by", "    workspace:\n      pick: outputs[branch].text != ''\n      by: diff.lines",
			&JoinWorkspace{Mode: JoinPick, Pick: "outputs[branch].text != ''", By: "diff.lines"},
			`{"pick":"outputs[branch].text != ''","by":"diff.lines"}`},
		{"pick flow", "    workspace: {by: -diff.files, pick: 'true'}",
			&JoinWorkspace{Mode: JoinPick, Pick: "true", By: "-diff.files"},
			`{"pick":"true","by":"-diff.files"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := mustParse(t, joinGraph(c.ws))
			assert.Empty(t, Validate(g).String())
			n, _ := g.Node("gather")
			assert.Equal(t, c.want, n.Workspace)
			assert.Equal(t, c.ws != "", g.Source.Has("nodes[7].workspace"))
			switch {
			case c.want == nil:
			case c.want.Mode == JoinPick && !strings.Contains(c.ws, "{"):
				assert.Equal(t, Pos{Line: 14, Column: 7}, g.Source.At("nodes[7].workspace"), "a block mapping's first key")
				assert.Equal(t, Pos{Line: 14, Column: 13}, g.Source.At("nodes[7].workspace.pick"))
			default:
				assert.Equal(t, Pos{Line: 13, Column: 16}, g.Source.At("nodes[7].workspace"), "a scalar's position, or a flow mapping's")
			}
			roundTrip(t, g)

			// JSON, as the graph travels in Temporal histories.
			b, err := json.Marshal(g)
			require.NoError(t, err)
			if c.json == "" {
				assert.NotContains(t, string(b), `"workspace"`)
			} else {
				assert.Contains(t, string(b), `"workspace":`+c.json)
			}
			var back Graph
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, withoutPositions(g), &back)
		})
	}
}

func TestJoinWorkspaceEncodes(t *testing.T) {
	g := mustParse(t, joinGraph("    workspace: {pick: outputs.test_a.exit_code == 0, by: diff.lines}"))
	out, err := Encode(g)
	require.NoError(t, err)
	assert.Contains(t, string(out), "    workspace:\n      pick: outputs.test_a.exit_code == 0\n      by: diff.lines\n")
	g = mustParse(t, joinGraph("    workspace: merge"))
	out, err = Encode(g)
	require.NoError(t, err)
	assert.Contains(t, string(out), "    max_visits: 1\n    workspace: merge\n")
}

func TestJoinWorkspaceJSON(t *testing.T) {
	for _, w := range []JoinWorkspace{
		{Mode: JoinTrunk}, {Mode: JoinMerge}, {Mode: JoinPick, Pick: "x == 1"},
		{Mode: JoinPick, Pick: "x == 1", By: "y"}, {Mode: JoinPick}, {Mode: "theirs"}, {},
	} {
		b, err := json.Marshal(w)
		require.NoError(t, err)
		var back JoinWorkspace
		require.NoError(t, json.Unmarshal(b, &back), string(b))
		assert.Equal(t, w, back, string(b))
	}
	var w JoinWorkspace
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"pik": "x"}`), &w), `unknown field "pik"`)
	assert.Error(t, json.Unmarshal([]byte(`3`), &w))
	b, err := json.Marshal(Node{ID: "j", Kind: KindJoin, Workspace: &JoinWorkspace{Mode: JoinPick, Pick: "true", By: "diff.lines"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"j","kind":"join","workspace":{"pick":"true","by":"diff.lines"}}`, string(b))
}

func TestJoinWorkspaceYAMLLibrary(t *testing.T) {
	// The YAML library's own encoder and decoder see the same forms.
	type holder struct {
		W *JoinWorkspace `yaml:"w"`
	}
	for _, w := range []JoinWorkspace{{Mode: JoinMerge}, {Mode: JoinPick, Pick: "true", By: "diff.lines"}} {
		b, err := yamlMarshal(holder{W: &w})
		require.NoError(t, err)
		var back holder
		require.NoError(t, yamlUnmarshal(b, &back), string(b))
		assert.Equal(t, w, *back.W, string(b))
	}
	var back holder
	assert.Error(t, yamlUnmarshal([]byte("w: {pik: x}\n"), &back))
}

func TestJoinWorkspaceProblems(t *testing.T) {
	cases := []struct {
		name, ws string
		want     []string
		msg      string
	}{
		{"unknown mode", "    workspace: theirs", []string{"13:16 G049 gather"}, `the workspace of node gather is "theirs"; write one of trunk, merge, a mapping {pick: EXPR, by: EXPR} (by optional)`},
		{"typo mode", "    workspace: merg", []string{"13:16 G049 gather"}, `did you mean "merge"?`},
		{"empty mode", "    workspace: ''", []string{"13:16 G049 gather"}, "the workspace of node gather is empty"},
		{"pick as a string", "    workspace: pick", []string{"13:16 G050 gather"}, "has no pick; write the boolean that a branch must meet to be kept"},
		{"empty pick", "    workspace:\n      pick: ''", []string{"14:13 G050 gather"}, "has no pick"},
		{"by without pick", "    workspace:\n      by: diff.lines", []string{"14:7 G050 gather"}, "has by but no pick; by only ranks the branches that pick keeps, so add a pick"},
		{"pick does not compile", "    workspace:\n      pick: output.exit_code == 0", []string{"14:13 G051 gather"}, "the pick of node gather does not compile: unknown name output"},
		{"pick not a boolean", "    workspace:\n      pick: diff.lines", []string{"14:13 G051 gather"}, "a pick must be a boolean, and this gives a int"},
		{"by does not compile", "    workspace:\n      pick: 'true'\n      by: diff.lines >", []string{"15:11 G051 gather"}, "the by of node gather does not compile"},
		{"by not a number", "    workspace:\n      pick: 'true'\n      by: branch", []string{"15:11 G051 gather"}, "a by must be a number, and this gives a string"},
		{"by uses a disabled builtin", "    workspace:\n      pick: 'true'\n      by: len(keys(outputs))", []string{"15:11 G051 gather"}, "keys() is not available in graph expressions"},
		{"unknown output", "    workspace:\n      pick: outputs.tests.exit_code == 0\n      by: outputs['test_c'].n ?? 0", []string{"14:13 G052 gather", "15:11 G052 gather"}, `the pick of node gather reads outputs.tests, but no node has id "tests", so it is always nil`},
		{"unknown output typo", "    workspace: {pick: outputs.test_aa.exit_code == 0}", []string{"13:23 G052 gather"}, `did you mean "test_a"?`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := Validate(mustParse(t, joinGraph(c.ws)))
			assert.Equal(t, c.want, brief(ps), ps.String())
			if len(ps) > 0 {
				assert.Contains(t, ps[0].Message, c.msg)
			}
		})
	}
}

func TestJoinWorkspaceOnOtherKinds(t *testing.T) {
	src := strings.Replace(joinGraph(""), "  - {id: done, kind: end}", "  - {id: done, kind: end, workspace: merge}", 1)
	ps := Validate(mustParse(t, src))
	assert.Equal(t, []string{"8:38 G036 done"}, brief(ps), ps.String())
	assert.Contains(t, ps[0].Message, "workspace has no effect on end node done (it belongs to join nodes)")

	// A workspace on a node of another kind is checked all the same.
	src = strings.Replace(joinGraph(""), "  - {id: done, kind: end}", "  - {id: done, kind: end, workspace: {pick: outputs.nope.x == 1}}", 1)
	assert.Equal(t, []string{"8:38 G036 done", "8:45 G052 done"}, brief(Validate(mustParse(t, src))))
}

func TestJoinWorkspaceParseErrors(t *testing.T) {
	cases := []struct {
		name, ws string
		want     []string
		msg      string
	}{
		{"unknown key", "    workspace:\n      pik: outputs.test_a.exit_code == 0", []string{"14:7 G002 "}, `unknown field "pik" in the workspace of node "gather"; did you mean "pick"? the fields are: pick, by`},
		{"mode as a key", "    workspace: {mode: merge}", []string{"13:17 G002 "}, `a join's workspace is one of trunk, merge, a mapping {pick: EXPR, by: EXPR} (by optional)`},
		{"a list", "    workspace: [merge]", []string{"13:16 G003 gather"}, "bad value for workspace in node \"gather\": a list; write one of trunk, merge"},
		{"pick twice", "    workspace:\n      pick: a\n      pick: b", []string{"15:7 G004 "}, `sets "pick" twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(joinGraph(c.ws)), "bad.yaml")
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.want, brief(pe.Problems), pe.Error())
			assert.Contains(t, pe.Problems[0].Message, c.msg)
		})
	}
}

// The code-built forms the DSL cannot write are refused too.
func TestJoinWorkspaceBuiltInCode(t *testing.T) {
	g := mustParse(t, joinGraph(""))
	n, _ := g.Node("gather")
	n.Workspace = &JoinWorkspace{Mode: JoinMerge, Pick: "true"}
	ps := Validate(g)
	assert.Equal(t, []string{CodeBadJoinWorkspace}, codes(ps), ps.String())
	assert.Contains(t, ps[0].Message, "the workspace of node gather is merge, which reads no pick or by")
	assert.Equal(t, Pos{Line: 10, Column: 5}, ps[0].Pos, "where the node is, as workspace was not written")
	assert.Equal(t, JoinTrunk, (*JoinWorkspace)(nil).ModeOrTrunk())
	assert.Equal(t, JoinMerge, n.Workspace.ModeOrTrunk())
}

func codes(ps Problems) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Code)
	}
	return out
}

func TestJoinWorkspaceSchema(t *testing.T) {
	sch, _ := loadSchema(t)
	for _, ws := range []string{"", "    workspace: trunk", "    workspace: merge", "    workspace: {pick: 'true'}", "    workspace: {pick: 'true', by: diff.lines}"} {
		assert.NoError(t, sch.Validate(yamlInstance(t, []byte(joinGraph(ws)))), ws)
	}
	for _, ws := range []string{"    workspace: theirs", "    workspace: pick", "    workspace: {by: diff.lines}", "    workspace: {pick: ''}", "    workspace: {pik: x}", "    workspace: {pick: x, by: 3}", "    workspace: [merge]"} {
		assert.Error(t, sch.Validate(yamlInstance(t, []byte(joinGraph(ws)))), ws)
	}
	onEnd := strings.Replace(joinGraph(""), "  - {id: done, kind: end}", "  - {id: done, kind: end, workspace: merge}", 1)
	assert.Error(t, sch.Validate(yamlInstance(t, []byte(onEnd))), "workspace belongs to join nodes")
}

func yamlMarshal(v any) ([]byte, error)   { return yaml.Marshal(v) }
func yamlUnmarshal(b []byte, v any) error { return yaml.Unmarshal(b, v) }

func TestSchemaJoinWorkspaceMatchesGo(t *testing.T) {
	_, schema := loadSchema(t)
	def := schema["$defs"].(map[string]any)["joinWorkspace"].(map[string]any)
	forms := def["oneOf"].([]any)
	assert.Equal(t, []any{JoinTrunk, JoinMerge}, forms[0].(map[string]any)["enum"])
	var keys []string
	for k := range forms[1].(map[string]any)["properties"].(map[string]any) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var goKeys []string
	for _, f := range fieldsOf(reflect.TypeFor[JoinWorkspace]()) {
		goKeys = append(goKeys, f.name)
	}
	slices.Sort(goKeys)
	assert.Equal(t, goKeys, keys)
	assert.Equal(t, []string{JoinTrunk, JoinPick, JoinMerge}, JoinModes())
}

package graph

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/catalogue"
)

const schemaPath = "../../docs/graph.schema.json"

func loadSchema(t *testing.T) (*jsonschema.Schema, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(schemaPath)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("graph.schema.json", doc))
	sch, err := c.Compile("graph.schema.json")
	require.NoError(t, err)
	var plain map[string]any
	require.NoError(t, json.Unmarshal(raw, &plain))
	return sch, plain
}

// yamlInstance reads YAML into the JSON data model the schema checks.
func yamlInstance(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal(src, &v))
	js, err := json.Marshal(v)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	require.NoError(t, err)
	return inst
}

func TestExamplesMatchSchema(t *testing.T) {
	sch, _ := loadSchema(t)
	for _, path := range examplePaths(t) {
		t.Run(path, func(t *testing.T) {
			src, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.NoError(t, sch.Validate(yamlInstance(t, src)))
		})
	}
}

func TestEncodedGraphsMatchSchema(t *testing.T) {
	sch, _ := loadSchema(t)
	for _, path := range examplePaths(t) {
		g, err := ParseFile(path)
		require.NoError(t, err)
		out, err := Encode(g)
		require.NoError(t, err)
		assert.NoError(t, sch.Validate(yamlInstance(t, out)), path)
	}
}

func TestSchemaRejectsWhatTheDSLRejects(t *testing.T) {
	sch, _ := loadSchema(t)
	bad := map[string]string{
		"unknown top-level field": "start: a\nnodes: [{id: a, kind: end}]\nstat: a\n",
		"unknown node field":      "start: a\nnodes: [{id: a, kind: end, qestion: x}]\n",
		"unknown kind":            "start: a\nnodes: [{id: a, kind: agnet}]\n",
		"unknown backend":         "start: a\nnodes: [{id: a, kind: agent, backend: gpt}]\n",
		"agent without backend":   "start: a\nnodes: [{id: a, kind: agent}]\n",
		"tool without run":        "start: a\nnodes: [{id: a, kind: tool}]\n",
		"human without question":  "start: a\nnodes: [{id: a, kind: human}]\n",
		"bad session":             "start: a\nnodes: [{id: a, kind: agent, backend: pi, session: keep}]\n",
		"bad fanout":              "start: a\nnodes: [{id: a, kind: end, fanout: some}]\n",
		"negative max_visits":     "start: a\nnodes: [{id: a, kind: end, max_visits: -1}]\n",
		"bad timeout":             "start: a\nnodes: [{id: a, kind: tool, run: [x], timeout: soon}]\n",
		"edge without to":         "start: a\nnodes: [{id: a, kind: end}]\nedges: [{from: a}]\n",
		"input without name":      "start: a\nnodes: [{id: a, kind: end}]\ninputs: [{default: 1}]\n",
		"bad permissions":         "start: a\nnodes: [{id: a, kind: agent, backend: pi, permissions: write}]\n",
		"env with a value":        "start: a\nnodes: [{id: a, kind: agent, backend: pi, env: [A=b]}]\n",
		"workspace without from":  "start: a\nnodes: [{id: a, kind: end}]\nworkspace: {ref: main}\n",
	}
	for name, src := range bad {
		assert.Error(t, sch.Validate(yamlInstance(t, []byte(src))), name)
	}
	src, err := os.ReadFile("testdata/broken.yaml")
	require.NoError(t, err)
	assert.Error(t, sch.Validate(yamlInstance(t, src)))
}

func schemaEnum(t *testing.T, schema map[string]any, def string) []string {
	t.Helper()
	d, ok := schema["$defs"].(map[string]any)[def].(map[string]any)
	require.True(t, ok, "schema has no $defs.%s", def)
	var out []string
	for _, v := range d["enum"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

func TestSchemaEnumsMatchGo(t *testing.T) {
	_, schema := loadSchema(t)
	var kinds []string
	for _, k := range Kinds {
		kinds = append(kinds, string(k))
	}
	assert.Equal(t, kinds, schemaEnum(t, schema, "kind"))
	assert.Equal(t, SessionModes(), schemaEnum(t, schema, "session"))
	assert.Equal(t, catalogue.Implemented(), schemaEnum(t, schema, "backend"))
	node := schema["$defs"].(map[string]any)["node"].(map[string]any)
	fanout := node["properties"].(map[string]any)["fanout"].(map[string]any)
	assert.Equal(t, []any{FanoutAll}, fanout["enum"])
	assert.Equal(t, catalogue.Permissions(), schemaEnum(t, schema, "permissions"))
}

func TestSchemaFieldsMatchGo(t *testing.T) {
	_, schema := loadSchema(t)
	defs := schema["$defs"].(map[string]any)
	props := func(obj any) []string {
		var out []string
		for k := range obj.(map[string]any)["properties"].(map[string]any) {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	goFields := func(t reflect.Type) []string {
		var out []string
		for _, f := range fieldsOf(t) {
			out = append(out, f.name)
		}
		slices.Sort(out)
		return out
	}
	assert.Equal(t, goFields(reflect.TypeFor[Graph]()), props(schema), "top level")
	assert.Equal(t, goFields(reflect.TypeFor[Node]()), props(defs["node"]), "node")
	assert.Equal(t, goFields(reflect.TypeFor[Edge]()), props(defs["edge"]), "edge")
	assert.Equal(t, goFields(reflect.TypeFor[Input]()), props(defs["input"]), "input")
	assert.Equal(t, goFields(reflect.TypeFor[WorkspaceSource]()), props(schema["properties"].(map[string]any)["workspace"]), "workspace")
}

func TestDocsListEveryCode(t *testing.T) {
	raw, err := os.ReadFile("../../docs/graph.md")
	require.NoError(t, err)
	doc := string(raw)
	for _, c := range Codes() {
		row := "| " + c.Code + " | " + c.Severity.String() + " |"
		assert.True(t, strings.Contains(doc, row), "docs/graph.md has no table row starting %q", row)
	}
	for _, m := range SessionModes() {
		assert.Contains(t, doc, "`"+m+"`")
	}
	for _, b := range DisabledBuiltins {
		assert.Contains(t, doc, "`"+b+"`")
	}
}

// The complete graphs shown in docs/graph.md are valid.
func TestDocsExamplesValidate(t *testing.T) {
	raw, err := os.ReadFile("../../docs/graph.md")
	require.NoError(t, err)
	blocks := strings.Split(string(raw), "```yaml\n")[1:]
	checked := 0
	for _, b := range blocks {
		src, _, _ := strings.Cut(b, "```")
		if !strings.Contains(src, "\nstart:") {
			continue
		}
		g, err := Parse([]byte(src), "docs/graph.md")
		require.NoError(t, err, src)
		assert.Empty(t, Validate(g).String(), src)
		checked++
	}
	assert.Positive(t, checked)
}

func TestProblemsFormat(t *testing.T) {
	ps := Problems{
		{Code: CodeNoEnd, Severity: SeverityError, File: "a.yaml", Pos: Pos{Line: 3, Column: 1}, Message: "m1"},
		{Code: CodeShadowedEdge, Severity: SeverityWarning, Message: "m2"},
	}
	assert.Equal(t, "x.yaml:3:1: G019 error: m1\nx.yaml: G037 warning: m2\n", ps.Format("x.yaml"))
	assert.Equal(t, "a.yaml:3:1: G019 error: m1\ngraph: G037 warning: m2", ps.String())
	assert.Equal(t, "y.yaml:3:1: G019 error: m1", ps[0].Format("y.yaml"))
	assert.Equal(t, "a.yaml:3:1: G019 error: m1", ps[0].Format(""))
	assert.Len(t, ps.Errors(), 1)
	assert.Len(t, ps.Warnings(), 1)
	assert.False(t, ps.Warnings().HasErrors())
	assert.NoError(t, ps.Warnings().Err())
	b, err := json.Marshal(ps[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"code":"G019","severity":"error","file":"a.yaml","pos":{"line":3,"column":1},"message":"m1"}`, string(b))
}

package runapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/graph"
)

// throughJSON is m as a checkpoint gives it back.
func throughJSON(t testing.TB, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// A tool's output is kept under the names its edges are type-checked
// against (graph.ToolOutput's expr tags), and reads back as written.
func TestToolOutputMapIsWhatEdgesAreCheckedAgainst(t *testing.T) {
	var tags []string
	typ := reflect.TypeFor[graph.ToolOutput]()
	for i := range typ.NumField() {
		tags = append(tags, typ.Field(i).Tag.Get("expr"))
	}
	var keys []string
	for k := range (ToolOutput{}).Map() {
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, tags, keys)

	for _, want := range []ToolOutput{
		{ExitCode: 0, Stdout: "ok\n", DurationMS: 12},
		{ExitCode: 2, Stdout: "building\n", Stderr: "FAIL x\n", DurationMS: 1_500_000},
		{ExitCode: -1, TimedOut: true, Stderr: "…"},
	} {
		got, err := ToolOutputOf(want.Map())
		require.NoError(t, err)
		assert.Equal(t, want, got, "read from the map the activity returns")
		got, err = ToolOutputOf(throughJSON(t, want.Map()))
		require.NoError(t, err)
		assert.Equal(t, want, got, "read from a checkpoint")
	}
	// What the tool activity wrote before the type, byte for byte.
	b, err := json.Marshal(ToolOutput{ExitCode: 1, Stdout: "a", Stderr: "b", DurationMS: 7}.Map())
	require.NoError(t, err)
	assert.JSONEq(t, `{"duration_ms":7,"exit_code":1,"stderr":"b","stdout":"a","timed_out":false}`, string(b))
	assert.Equal(t, `{"duration_ms":7,"exit_code":1,"stderr":"b","stdout":"a","timed_out":false}`, string(b))
}

func TestToolOutputOfToleratesWhatItDidNotWrite(t *testing.T) {
	_, err := ToolOutputOf(nil)
	assert.ErrorIs(t, err, ErrNotToolOutput, "no output at all")
	_, err = ToolOutputOf(map[string]any{"text": "an agent's reply"})
	assert.ErrorIs(t, err, ErrNotToolOutput)

	got, err := ToolOutputOf(map[string]any{"exit_code": "1", "stdout": 3, "stderr": "tail", "timed_out": "yes"})
	var oe *OutputError
	require.ErrorAs(t, err, &oe)
	assert.ErrorIs(t, err, ErrMalformedOutput)
	assert.Equal(t, "exit_code", oe.Field, "the first bad field is named")
	assert.Equal(t, "a string", oe.Got)
	assert.Equal(t, ToolOutput{Stderr: "tail"}, got, "bad fields read as zero values, good ones as written")
	assert.NotContains(t, err.Error(), `"1"`, "the error never quotes the value")

	// As the workflow has always read an exit code: an older output's
	// missing fields are zero values, a float cut to an int.
	got, err = ToolOutputOf(map[string]any{"exit_code": 3.0, "timed_out": nil})
	require.NoError(t, err)
	assert.Equal(t, ToolOutput{ExitCode: 3}, got)
	got, err = ToolOutputOf(map[string]any{"exit_code": int64(4)})
	require.NoError(t, err)
	assert.Equal(t, 4, got.ExitCode)
}

func explainedJoin() JoinOutput {
	yes, no, by := true, false, 3.5
	return JoinOutput{
		Mode: graph.JoinPick, Kept: "b", Explained: true, Pick: "last.exit_code == 0", By: "diff.lines",
		Branches: []JoinBranch{
			{Name: "a", Head: "c1", PickValue: &no, Why: "by: not a number"},
			{Name: "b", Head: "c2", Kept: true, Change: graph.DiffStat{Files: 1, Added: 2, Removed: 1, Lines: 3}, PickValue: &yes, ByValue: &by},
		},
	}
}

// A join's output is the map the workflow has always written (the
// in-memory values an edge reads before any save, and the JSON the
// checkpoint holds), and reads back as written.
func TestJoinOutputMapAndBack(t *testing.T) {
	plain := JoinOutput{Mode: graph.JoinMerge, Branches: []JoinBranch{{Name: "a", Head: "h"}},
		Conflicts: []JoinConflict{{Path: "x", Branches: []string{"a", "b"}, Ours: "1", Theirs: "2"}, {Path: "y", Branches: []string{}}}}
	assert.Equal(t, map[string]any{
		"mode": "merge", "kept": "",
		"branches":  []any{map[string]any{"name": "a", "head": "h", "kept": false, "files": 0, "added": 0, "removed": 0, "lines": 0}},
		"conflicts": []any{map[string]any{"path": "x", "branches": []any{"a", "b"}, "ours": "1", "theirs": "2"}, map[string]any{"path": "y", "branches": []any{}, "ours": "", "theirs": ""}},
	}, plain.Map())
	b, err := json.Marshal(JoinOutput{Mode: graph.JoinTrunk}.Map())
	require.NoError(t, err)
	assert.Equal(t, `{"branches":null,"conflicts":[],"kept":"","mode":"trunk"}`, string(b), "no branches: null, as before")
	b, err = json.Marshal(explainedJoin().Map())
	require.NoError(t, err)
	assert.Equal(t, `{"branches":[`+
		`{"added":0,"by_value":null,"files":0,"head":"c1","kept":false,"lines":0,"name":"a","pick_value":false,"removed":0,"why":"by: not a number"},`+
		`{"added":2,"by_value":3.5,"files":1,"head":"c2","kept":true,"lines":3,"name":"b","pick_value":true,"removed":1,"why":""}],`+
		`"by":"diff.lines","conflicts":[],"kept":"b","mode":"pick","pick":"last.exit_code == 0"}`, string(b))

	for _, want := range []JoinOutput{plain, explainedJoin(), {Mode: graph.JoinTrunk}} {
		for _, m := range []map[string]any{want.Map(), throughJSON(t, want.Map())} {
			got, err := JoinOutputOf(m)
			require.NoError(t, err)
			if want.Conflicts != nil {
				// An empty list of a conflict's branches reads as none.
				for i := range want.Conflicts {
					if len(want.Conflicts[i].Branches) == 0 {
						want.Conflicts[i].Branches = nil
					}
				}
			}
			assert.Equal(t, want, got)
		}
	}
	got, err := JoinOutputOf(nil)
	require.NoError(t, err, "a join without workspaces records none")
	assert.Equal(t, JoinOutput{}, got)
}

func TestJoinOutputOfToleratesWhatItDidNotWrite(t *testing.T) {
	for name, c := range map[string]struct {
		m     map[string]any
		field string
		want  JoinOutput
	}{
		"mode a number":        {map[string]any{"mode": 1, "kept": "a"}, "mode", JoinOutput{Kept: "a"}},
		"branches an object":   {map[string]any{"mode": "pick", "branches": map[string]any{}}, "branches", JoinOutput{Mode: "pick"}},
		"a branch a string":    {map[string]any{"branches": []any{"a", map[string]any{"name": "b"}}}, "branches[0]", JoinOutput{Branches: []JoinBranch{{Name: "b"}}}},
		"kept a string":        {map[string]any{"branches": []any{map[string]any{"name": "b", "kept": "true", "lines": 2.0}}}, "branches[0].kept", JoinOutput{Branches: []JoinBranch{{Name: "b", Change: graph.DiffStat{Lines: 2}}}}},
		"pick_value a number":  {map[string]any{"pick": "x", "branches": []any{map[string]any{"pick_value": 1.0, "by_value": "2"}}}, "branches[0].pick_value", JoinOutput{Explained: true, Pick: "x", Branches: []JoinBranch{{}}}},
		"a conflict's branch":  {map[string]any{"conflicts": []any{map[string]any{"path": "p", "branches": []any{"a", nil}}}}, "conflicts[0].branches[1]", JoinOutput{Conflicts: []JoinConflict{{Path: "p", Branches: []string{"a"}}}}},
		"conflicts a string":   {map[string]any{"conflicts": "many"}, "conflicts", JoinOutput{}},
		"a conflict a boolean": {map[string]any{"conflicts": []any{true}}, "conflicts[0]", JoinOutput{}},
	} {
		got, err := JoinOutputOf(c.m)
		var oe *OutputError
		require.ErrorAs(t, err, &oe, name)
		assert.Equal(t, c.field, oe.Field, name)
		assert.Equal(t, "join", oe.Output, name)
		assert.Equal(t, c.want, got, name)
	}
}

// Whatever a checkpoint holds where a join's or a tool's output should
// be, reading it never panics, and an output read without error writes
// back the map it was read from.
func FuzzOutputsOf(f *testing.F) {
	for _, m := range []map[string]any{explainedJoin().Map(), (ToolOutput{ExitCode: 1, Stdout: "x"}).Map(), {"branches": []any{1, "a", nil}}} {
		b, err := json.Marshal(m)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]any
		if json.Unmarshal(data, &m) != nil {
			return
		}
		if j, err := JoinOutputOf(m); err == nil {
			again, err := JoinOutputOf(throughJSON(t, j.Map()))
			require.NoError(t, err)
			assert.Equal(t, j, again)
		} else {
			assert.True(t, errors.Is(err, ErrMalformedOutput), "%v", err)
		}
		if tool, err := ToolOutputOf(m); err == nil {
			again, err := ToolOutputOf(throughJSON(t, tool.Map()))
			require.NoError(t, err)
			assert.Equal(t, tool, again)
		} else {
			assert.True(t, errors.Is(err, ErrMalformedOutput) || errors.Is(err, ErrNotToolOutput), "%v", err)
		}
	})
}

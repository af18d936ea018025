package workflows

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

func branchFor(name string, exit int, lines int) *branchRun {
	return &branchRun{
		st:   &runstore.BranchState{Name: name, Last: name + "_tests"},
		sc:   &scope{branch: true, name: name},
		outs: map[string]map[string]any{name + "_tests": {"exit_code": exit}},
		stat: graph.DiffStat{Files: 1, Added: lines, Lines: lines},
	}
}

// pick keeps the first branch in branch order for which pick holds; with
// by, the holding branch with the smallest by, the first of equals; none
// when pick holds for none.
func TestPickBranch(t *testing.T) {
	join := func(pick, by string) *graph.Node {
		return &graph.Node{ID: "best", Kind: graph.KindJoin, Workspace: &graph.JoinWorkspace{Mode: graph.JoinPick, Pick: pick, By: by}}
	}
	bs := []*branchRun{branchFor("a", 1, 1), branchFor("b", 0, 9), branchFor("c", 0, 3), branchFor("d", 0, 3)}
	for _, c := range []struct {
		pick, by, want string
	}{
		{"last.exit_code == 0", "", "b"},
		{"last.exit_code == 0", "diff.lines", "c"},
		{"true", "diff.lines", "a"},
		{"true", "-diff.lines", "b"},
		{"branch == 'd' || branch == 'c'", "", "c"},
		{"last.exit_code == 2", "diff.lines", ""},
		{"outputs.nope.exit_code == 0", "", ""},
	} {
		got, err := pickBranch(join(c.pick, c.by), bs, false)
		require.NoError(t, err, "%+v", c)
		name := ""
		if got != nil {
			name = got.st.Name
		}
		assert.Equal(t, c.want, name, "pick %q by %q", c.pick, c.by)
	}
	_, err := pickBranch(join("true", "last.text"), bs, false)
	require.Error(t, err, "a by that is not a number fails the join")
	assert.Contains(t, err.Error(), `join "best": by "last.text" on branch a`)
}

// The join's output lists every branch in branch order; kept names the
// picked one, and only a merge lists conflicts.
func TestJoinOutput(t *testing.T) {
	bs := []*branchRun{branchFor("a", 0, 2), branchFor("b", 0, 5)}
	bs[1].kept = true
	out := joinOutput(&graph.Node{ID: "j", Workspace: &graph.JoinWorkspace{Mode: graph.JoinPick, Pick: "true"}}, bs, []activities.Conflict{{Path: "x"}}, false)
	assert.Equal(t, "pick", out["mode"])
	assert.Equal(t, "b", out["kept"])
	assert.Empty(t, out["conflicts"])
	list := out["branches"].([]any)
	require.Len(t, list, 2)
	assert.Equal(t, map[string]any{"name": "a", "head": "", "kept": false, "files": 1, "added": 2, "removed": 0, "lines": 2}, list[0])
	out = joinOutput(&graph.Node{ID: "j", Workspace: &graph.JoinWorkspace{Mode: graph.JoinMerge}}, bs, []activities.Conflict{{Path: "x", Branches: []string{"a", "b"}}}, false)
	assert.Equal(t, "", out["kept"])
	assert.Equal(t, []any{map[string]any{"path": "x", "branches": []any{"a", "b"}, "ours": "", "theirs": ""}}, out["conflicts"])
	out = joinOutput(&graph.Node{ID: "j", Kind: graph.KindJoin}, bs, nil, false)
	assert.Equal(t, "trunk", out["mode"])
}

// With explain, a pick keeps the same branch as without, and every branch
// carries the values it was judged by; an error on a branch after the
// decision is recorded on it instead of failing the join.
func TestPickBranchExplained(t *testing.T) {
	join := func(pick, by string) *graph.Node {
		return &graph.Node{ID: "best", Kind: graph.KindJoin, Workspace: &graph.JoinWorkspace{Mode: graph.JoinPick, Pick: pick, By: by}}
	}
	for _, c := range []struct{ pick, by string }{
		{"last.exit_code == 0", ""}, {"last.exit_code == 0", "diff.lines"}, {"true", "-diff.lines"}, {"last.exit_code == 2", ""},
	} {
		plain, err := pickBranch(join(c.pick, c.by), []*branchRun{branchFor("a", 1, 1), branchFor("b", 0, 9), branchFor("c", 0, 3)}, false)
		require.NoError(t, err)
		bs := []*branchRun{branchFor("a", 1, 1), branchFor("b", 0, 9), branchFor("c", 0, 3)}
		explained, err := pickBranch(join(c.pick, c.by), bs, true)
		require.NoError(t, err)
		if plain == nil {
			assert.Nil(t, explained, "%+v", c)
		} else {
			require.NotNil(t, explained, "%+v", c)
			assert.Equal(t, plain.st.Name, explained.st.Name, "%+v", c)
		}
		for _, b := range bs {
			require.NotNil(t, b.pick, "branch %s of %+v has its pick value", b.st.Name, c)
			if c.by != "" && *b.pick {
				require.NotNil(t, b.by, "branch %s of %+v has its by value", b.st.Name, c)
			}
		}
	}
	bs := []*branchRun{branchFor("a", 0, 1), branchFor("b", 0, 9)}
	bs[1].outs = map[string]map[string]any{"b_tests": {"exit_code": "not a number"}}
	kept, err := pickBranch(join("last.exit_code + 1 == 1", ""), bs, true)
	require.NoError(t, err, "branch b comes after the decision")
	assert.Equal(t, "a", kept.st.Name)
	assert.NotEmpty(t, bs[1].why)

	bs[0].kept = true
	out := joinOutput(join("last.exit_code + 1 == 1", ""), bs, nil, true)
	assert.Equal(t, "last.exit_code + 1 == 1", out["pick"])
	first := out["branches"].([]any)[0].(map[string]any)
	assert.Equal(t, true, first["pick_value"])
	assert.Nil(t, first["by_value"])
}

// A branch's progress is saved by the fan-out that owns its record: the
// trunk's for a record of its checkpoint, never for a nested fan-out's
// branch (its parent's save records it).
func TestOwnsBranch(t *testing.T) {
	r := &runImpl{cp: &runstore.Checkpoint{Branches: []runstore.BranchState{{Name: "a"}, {Name: "b"}}}}
	assert.True(t, r.ownsBranch(&branchRun{st: &r.cp.Branches[0]}))
	assert.True(t, r.ownsBranch(&branchRun{st: &r.cp.Branches[1]}))
	nested := runstore.BranchState{Name: "a"}
	assert.False(t, r.ownsBranch(&branchRun{st: &nested}), "an equal record elsewhere is not the checkpoint's")
	assert.False(t, (&runImpl{cp: &runstore.Checkpoint{}}).ownsBranch(&branchRun{st: &nested}))
}

package workflows

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// wideFanout fans out from split to n tool branches that meet at one join.
func wideFanout(n int) string {
	var b strings.Builder
	b.WriteString("name: wide\nstart: split\nnodes:\n  - {id: split, kind: tool, fanout: all, run: [sh, -c, 'true']}\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: b%d, kind: tool, run: [sh, -c, 'true']}\n", i)
	}
	b.WriteString("  - {id: meet, kind: join}\n  - {id: done, kind: end}\nedges:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {from: split, to: b%d}\n  - {from: b%d, to: meet}\n", i, i)
	}
	b.WriteString("  - {from: meet, to: done}\n")
	return b.String()
}

// A fan-out opens at most graph.MaxBranches branches: as many run, one
// more fails the run before any branch runs, saying what to do.
func (s *GraphRunSuite) TestFanoutOpensAtMostMaxBranches() {
	_, err := s.run(wideFanout(16), nil)
	s.Require().NoError(err)
	s.Equal(1, s.latest().Visits["b15"])

	s.SetupTest()
	_, err = s.run(wideFanout(17), nil)
	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(err, &appErr)
	s.Equal(runapi.ErrTypeGraph, appErr.Type())
	s.Contains(appErr.Error(), `a fan-out from "split" opens 17 branches, more than the 16 one fan-out may have`)
	s.Zero(s.latest().Visits["b0"], "no branch ran")
}

// twoJoins: the branches of one fan-out reach different joins.
var twoJoins = graphYAML("two-joins")

// Branches that meet at different joins fail the run, on both fan-out
// paths, naming the joins.
func (s *GraphRunSuite) TestBranchesMustMeetAtOneJoin() {
	s.requireGraphErrorOnBothFanouts(twoJoins, `fan-out branches meet at different joins ("ja" and "jb")`)
}

// A branch that reaches an end node before a join fails the run, on both
// fan-out paths.
func (s *GraphRunSuite) TestABranchMustReachAJoin() {
	g := strings.Replace(twoJoins, "{from: b, to: jb}", "{from: b, to: done}", 1)
	s.requireGraphErrorOnBothFanouts(g, `fan-out branch reached end node "done" before a join`)
}

// requireGraphErrorOnBothFanouts runs src with branch workspaces and as a
// run recorded before them (the shared fan-out): each fails with a graph
// error that says want.
func (s *GraphRunSuite) requireGraphErrorOnBothFanouts(src, want string) {
	for _, shared := range []bool{false, true} {
		s.SetupTest()
		if shared {
			s.recordedBefore(changeBranchWorkspaces, versionBranchWorkspaces)
		}
		_, err := s.run(src, nil)
		var appErr *temporal.ApplicationError
		s.Require().ErrorAs(err, &appErr, "shared=%v", shared)
		s.Equal(runapi.ErrTypeGraph, appErr.Type())
		s.Contains(appErr.Error(), want)
	}
}

// The older fan-out (runs recorded before branch workspaces) runs each
// branch to the join, and the join's input maps each branch's last node
// to its output; a branch that fans out again meets its own join inside
// it.
func (s *GraphRunSuite) TestSharedFanoutAndNestedFanout() {
	s.recordedBefore(changeBranchWorkspaces, versionBranchWorkspaces)
	res, err := s.run(nestedFanout, nil)
	s.Require().NoError(err)
	s.Equal("left+in1,in2", res.Output["sides"])
	cp := s.latest()
	for _, n := range []string{"split", "left", "right", "in1", "in2", "inner", "after", "meet"} {
		s.Equal(1, cp.Visits[n], n)
	}
	s.Nil(cp.Branches, "the older fan-out records no branches")
}

// nestedFanout: the right branch fans out again, and its inner join is
// visited inside the branch before the outer join.
var nestedFanout = graphYAML("nested-fanout")

// The same nested fan-out with branch workspaces: the inner branches are
// named after the outer one, and the run's checkpoint records only the
// outer branches while they are open.
func (s *GraphRunSuite) TestNestedFanoutWithBranchWorkspaces() {
	var saved [][]string
	res, err := s.run(nestedFanout, nil)
	s.Require().NoError(err)
	s.Equal("left+in1,in2", res.Output["sides"])
	cps, _ := s.checkpoints()
	for _, cp := range cps {
		var names []string
		for _, b := range cp.Branches {
			names = append(names, b.Name)
		}
		if len(names) > 0 {
			saved = append(saved, names)
		}
	}
	s.Require().NotEmpty(saved)
	for _, names := range saved {
		s.Equal([]string{"left", "right"}, names)
	}
	var joined []string
	for _, b := range s.latest().Joined {
		joined = append(joined, fmt.Sprintf("%s@%s-%d", b.Name, b.Join, b.JoinVisit))
	}
	s.Equal([]string{"right.in1@inner-1", "right.in2@inner-1", "left@meet-1", "right@meet-1"}, joined)
}

// A run resumed from a checkpoint taken inside a fan-out takes each
// branch up where it stood: every branch still loops exactly three times
// in all, and no visit is run twice.
func (s *GraphRunSuite) TestResumeInsideAFanoutContinuesEachBranch() {
	_, err := s.run(branchLoop, nil)
	s.Require().NoError(err)
	mid, newest := s.firstCheckpoint(func(cp *runstore.Checkpoint) bool {
		n := cp.Visits["left"] + cp.Visits["right"]
		return len(cp.Branches) == 2 && n > 0 && n < 6
	})
	s.Require().NotNil(mid, "a checkpoint inside the fan-out")
	s.Require().Len(mid.Cursor, 2)
	left, right := mid.Visits["left"], mid.Visits["right"]
	before := map[string]int{}
	for _, r := range s.agents["scripted"].requests() {
		before[r.NodeID]++
	}
	cp := *mid
	cp.Seq = newest
	done := s.resume(&cp)
	s.Require().NoError(done.GetWorkflowError())
	after := map[string]int{}
	for _, r := range s.agents["scripted"].requests() {
		after[r.NodeID]++
	}
	s.Equal(3-left, after["left"]-before["left"], "left goes on from its visit %d", left)
	s.Equal(3-right, after["right"]-before["right"], "right goes on from its visit %d", right)
	s.Equal(0, after["split"]-before["split"], "the fan-out is not opened again")
	final := s.latest()
	s.Equal(3, final.Visits["left"])
	s.Equal(3, final.Visits["right"])
	s.Nil(final.Branches)
}

// The checkpoint keeps the branches of the last runstore.MaxJoined joined
// branches, newest last, without their snapshots' notes; the latest
// join's are those of its last visit.
func TestJoinedKeepsTheLatest(t *testing.T) {
	r := &runImpl{cp: &runstore.Checkpoint{}}
	trunk := &runstore.WorkspaceState{Commit: "t"}
	open := func(n int) []*branchRun {
		var bs []*branchRun
		for i := range n {
			bs = append(bs, &branchRun{
				st: &runstore.BranchState{Name: fmt.Sprintf("b%d", i), Next: &runstore.Cursor{Node: "x"}},
				sc: &scope{ws: &runstore.WorkspaceState{Commit: fmt.Sprintf("c%d", i), Notes: []string{"left out"}}},
			})
		}
		return bs
	}
	r.recordJoined("j", 1, trunk, open(10))
	require.Len(t, r.cp.Joined, 10)
	r.recordJoined("j", 2, trunk, open(7))
	require.Len(t, r.cp.Joined, runstore.MaxJoined)
	assert.Equal(t, "b1", r.cp.Joined[0].Name, "the oldest went")
	assert.Equal(t, 1, r.cp.Joined[0].JoinVisit)
	for _, b := range r.cp.Joined {
		assert.Equal(t, "t", b.Base)
		assert.Nil(t, b.Next)
		assert.Empty(t, b.Workspace.Notes)
	}
	latest := r.latestJoined()
	require.Len(t, latest, 7)
	for i, b := range latest {
		assert.Equal(t, fmt.Sprintf("b%d", i), b.Name)
		assert.Equal(t, 2, b.JoinVisit)
	}
	assert.Nil(t, (&runImpl{cp: &runstore.Checkpoint{}}).latestJoined())
	// A join visited once holds every branch the checkpoint kept.
	one := &runImpl{cp: &runstore.Checkpoint{}}
	one.recordJoined("j", 1, trunk, open(3))
	assert.Len(t, one.latestJoined(), 3)
}

func TestAnswered(t *testing.T) {
	assert.False(t, answered(nil), "no question is not an answer")
	assert.False(t, answered([]runstore.Question{{Answered: true}, {}}))
	assert.True(t, answered([]runstore.Question{{Answered: true}, {Answered: true}}))
}

// A resume inside a fan-out whose branches have more than one node takes
// each branch up at its next node, on its own files: a branch's first
// node is not visited again, and its second sees what the first wrote.
func (s *GraphRunSuite) TestResumeInsideAFanoutGoesOnAtEachBranchsNextNode() {
	_, err := s.run(filesGraph, nil)
	s.Require().NoError(err)
	mid, newest := s.firstCheckpoint(func(cp *runstore.Checkpoint) bool {
		return slices.ContainsFunc(cp.Branches, func(b runstore.BranchState) bool {
			return b.Next != nil && (b.Next.Node == "l2" || b.Next.Node == "r2")
		})
	})
	s.Require().NotNil(mid, "a checkpoint with a branch at its second node")
	cp := *mid
	cp.Seq = newest
	done := s.resume(&cp)
	s.Require().NoError(done.GetWorkflowError())
	final := s.latest()
	for _, n := range []string{"seed", "l1", "l2", "r1", "r2", "meet", "after"} {
		s.Equal(1, final.Visits[n], n)
	}
	s.Equal("base\nL\nbase.txt\nl.txt\n", final.Outputs["l2"]["stdout"])
	s.Equal("base\nR\nbase.txt\nr.txt\n", final.Outputs["r2"]["stdout"])
}

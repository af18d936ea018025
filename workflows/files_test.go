package workflows

// filesGraph writes files on the trunk, in two branches of a fan-out and
// after their merge; each tool prints what it finds.
const filesGraph = `
name: files
start: seed
nodes:
  - {id: seed, kind: tool, fanout: all, run: [sh, -c, 'echo base > base.txt']}
  - {id: l1, kind: tool, run: [sh, -c, 'echo L > l.txt']}
  - {id: l2, kind: tool, run: [sh, -c, 'cat base.txt l.txt; ls']}
  - {id: r1, kind: tool, run: [sh, -c, 'echo R > r.txt']}
  - {id: r2, kind: tool, run: [sh, -c, 'cat base.txt r.txt; ls']}
  - {id: meet, kind: join, workspace: merge}
  - {id: after, kind: tool, run: [sh, -c, 'echo more >> base.txt; ls']}
  - {id: last, kind: tool, run: [sh, -c, 'cat base.txt']}
  - {id: done, kind: end}
edges:
  - {from: seed, to: l1}
  - {from: seed, to: r1}
  - {from: l1, to: l2}
  - {from: r1, to: r2}
  - {from: l2, to: meet}
  - {from: r2, to: meet}
  - {from: meet, to: after}
  - {from: after, to: last}
  - {from: last, to: done, with: {said: output.stdout}}
`

// Each visit runs on the files of where it is: a branch on its own line
// (its earlier visit's files, the trunk's from before the fan-out, never
// the other branch's), the trunk on the trunk's, and after a merge on
// both branches' files; each changing visit is one more snapshot.
func (s *GraphRunSuite) TestVisitsRunOnTheirOwnFiles() {
	res, err := s.run(filesGraph, nil)
	s.Require().NoError(err)
	cp := s.latest()
	s.Equal("base\nL\nbase.txt\nl.txt\n", cp.Outputs["l2"]["stdout"])
	s.Equal("base\nR\nbase.txt\nr.txt\n", cp.Outputs["r2"]["stdout"])
	s.Equal("base.txt\nl.txt\nr.txt\n", cp.Outputs["after"]["stdout"])
	s.Equal("base\nmore\n", res.Output["said"])
	s.Require().NotNil(cp.Workspace)
	s.Equal(3, cp.Workspace.Files)
	s.Equal(5, cp.Workspace.Commits, "seed, l1, r1, the merge and after")
}

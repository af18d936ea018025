package workflows

// filesGraph writes files on the trunk, in two branches of a fan-out and
// after their merge; each tool prints what it finds.
var filesGraph = graphYAML("files")

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

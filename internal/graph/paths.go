package graph

import (
	"slices"
	"strings"
)

// ClimbsOut reports whether a path's text holds a ".." element. The
// kernel resolves ".." after the links before it, not as the text reads
// (`s/../x` with s a link into a deep directory stays where the link
// went), so a path a sandbox is given is never taken through one: a
// tool's program and a workdir holding one are refused (G066, G067), and
// so are they at run time, where a template may have put one there.
func ClimbsOut(path string) bool {
	return slices.Contains(strings.Split(path, "/"), "..")
}

// checkPaths checks the paths a node names: a tool's program, and a
// workdir.
func (v *validator) checkPaths(i int, name string) {
	n := &v.g.Nodes[i]
	path := nodePath(i)
	if n.Kind == KindTool && len(n.Run) > 0 && ClimbsOut(n.Run[0]) {
		v.add(CodeProgramClimbs, v.at(path+".run", path), n.ID, "the program of tool node %s, %q, climbs with \"..\", which the kernel resolves after the links before it rather than as the text reads; name it by a path without \"..\" (relative to the workspace, absolute, or a command on the worker's PATH)", name, n.Run[0])
	}
	if n.Workdir != "" && ClimbsOut(n.Workdir) {
		v.add(CodeBadWorkdir, v.at(path+".workdir", path), n.ID, "the workdir of node %s, %q, climbs with \"..\"; name a folder inside the run's workspace without \"..\" (or an absolute directory below the roots the workers' TETHER_WORKDIR_ROOTS names)", name, n.Workdir)
	}
}

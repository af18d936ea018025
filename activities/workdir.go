package activities

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// WorkdirRootsEnv names the directories below which an agent's absolute
// workdir may lie on this worker (separated like PATH).
const WorkdirRootsEnv = "TETHER_WORKDIR_ROOTS"

// visitDirs returns the workspace root of the visit ("" when the node runs
// in an absolute directory Tether does not manage), the directory its
// working directory is made below (the root, or the operator's root that
// holds an absolute workdir), and that working directory. A workdir is
// refused (ErrTypeWorkdirRefused) when it holds "..", or is absolute and
// not below one of the worker's WorkdirRoots.
func (a *Activities) visitDirs(req *VisitRequest) (root, base, cwd string, err error) {
	// The run and node ids become directory names: one that is not an id
	// (`../../x`) would create directories outside the work root.
	if err := runstore.ValidateRunID(req.RunID); err != nil {
		return "", "", "", temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
	}
	if req.Branch {
		if err := runstore.ValidateNodeID(req.NodeID); err != nil {
			return "", "", "", temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
		}
		if req.BranchName != "" {
			if err := runstore.ValidateBranchName(req.BranchName); err != nil {
				return "", "", "", temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
			}
		}
	}
	wd := req.Node.Workdir
	if graph.ClimbsOut(wd) {
		return "", "", "", workdirRefused("node %q: workdir %q climbs with \"..\", which the kernel resolves after the links before it rather than as the text reads; name a folder inside the run's workspace without \"..\"", req.NodeID, wd)
	}
	if filepath.IsAbs(wd) {
		base, cwd, err := a.absoluteWorkdir(req.NodeID, filepath.Clean(wd))
		return "", base, cwd, err
	}
	root = filepath.Join(a.WorkDir, req.RunID)
	switch {
	case req.BranchName != "":
		// The branch's own directory, beside the run's (never inside it,
		// where a snapshot would take it in).
		root = filepath.Join(a.WorkDir, req.RunID+"@"+req.BranchName)
	case req.Branch:
		// A private copy per branch node.
		root = filepath.Join(a.WorkDir, req.RunID+"@"+req.NodeID)
	}
	cwd = root
	if wd != "" {
		if !filepath.IsLocal(wd) {
			return "", "", "", workdirRefused("node %q: workdir %q leaves the run's workspace; use a relative path inside it", req.NodeID, wd)
		}
		cwd = filepath.Join(root, wd)
	}
	return root, root, cwd, nil
}

// absoluteWorkdir is the root of the worker's WorkdirRoots that holds the
// absolute workdir wd, and wd: refused when none does, and when wd is, or
// holds, or lies in the worker's own work or state directory (other runs'
// workspaces and sessions are there).
func (a *Activities) absoluteWorkdir(node, wd string) (base, cwd string, err error) {
	if len(a.WorkdirRoots) == 0 {
		return "", "", workdirRefused("node %q: workdir %s is an absolute directory, which the agent reads and writes, and this worker runs a node in none: its operator names where one may lie with %s (e.g. %s=/srv/checkouts on every worker); or give the node a workdir inside the run's workspace", node, wd, WorkdirRootsEnv, WorkdirRootsEnv)
	}
	for _, r := range a.WorkdirRoots {
		r = filepath.Clean(r)
		if !filepath.IsAbs(r) || graph.ClimbsOut(r) || wd == r || !strings.HasPrefix(wd, strings.TrimSuffix(r, "/")+"/") {
			continue
		}
		// Below the root nothing is a link (makeWorkdir), so this is
		// where wd will be.
		w := filepath.Join(realOrClean(r), strings.TrimPrefix(wd, strings.TrimSuffix(r, "/")+"/"))
		for _, own := range []struct{ what, dir string }{{"work directory (the runs' workspaces)", a.WorkDir}, {"state directory (the runs' sessions)", a.StateDir}} {
			if own.dir == "" {
				continue
			}
			if d := realOrClean(own.dir); within(w, d) || within(d, w) {
				return "", "", workdirRefused("node %q: workdir %s is, holds or lies in the worker's %s %s; name a directory of its own below %s", node, wd, own.what, own.dir, r)
			}
		}
		return r, wd, nil
	}
	return "", "", workdirRefused("node %q: workdir %s lies below none of the roots this worker runs absolute workdirs in (%s=%s); move it below one, or add its root to %s on the workers", node, wd, WorkdirRootsEnv, strings.Join(a.WorkdirRoots, string(filepath.ListSeparator)), WorkdirRootsEnv)
}

// makeWorkdir makes cwd below base (the run's workspace root, or the
// operator's root of an absolute workdir), one directory at a time and
// without following a link: a link on the way (one a visit planted in
// the workspace, say) is refused, since the sandbox would give the
// process where it leads, read-write. What exists and is a directory is
// kept as it is.
func (a *Activities) makeWorkdir(node, base, cwd string) error {
	if err := mkdirAll(base); err != nil {
		return fmt.Errorf("node %q: create its directory: %w", node, err)
	}
	rel, err := filepath.Rel(base, cwd)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return workdirRefused("node %q: workdir %s does not lie below %s", node, cwd, base)
	}
	if rel == "." {
		return nil
	}
	r, err := os.OpenRoot(base)
	if err != nil {
		return fmt.Errorf("node %q: create its directory: %w", node, err)
	}
	defer r.Close()
	at := ""
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		at = filepath.Join(at, part)
		st, err := r.Lstat(at)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := r.Mkdir(at, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("node %q: create its directory %s: %w", node, filepath.Join(base, at), err)
			}
			if st, err = r.Lstat(at); err != nil {
				return fmt.Errorf("node %q: create its directory %s: %w", node, filepath.Join(base, at), err)
			}
		case err != nil:
			return fmt.Errorf("node %q: its directory %s: %w", node, filepath.Join(base, at), err)
		}
		if st.Mode()&fs.ModeSymlink != 0 || !st.IsDir() {
			return workdirRefused("node %q: its working directory %s passes through %s, which is not a directory but a link or a file (a visit may have put it there); a working directory is never taken through a link", node, cwd, filepath.Join(base, at))
		}
	}
	return nil
}

// workdirRefused is the final error of a workdir this worker refuses.
func workdirRefused(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeWorkdirRefused, errors.New(msg))
}

// realOrClean is p with its links followed, or cleaned when it does not
// resolve.
func realOrClean(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

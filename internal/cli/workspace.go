package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// emptyTree is git's id of the empty tree: what a run that started empty
// is diffed against.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

func (a *app) workspaceCmd() *cobra.Command {
	var (
		at, from, branch string
		noHistory, all   bool
	)
	cmd := &cobra.Command{
		Use:   "workspace RUN log|diff|export DIR",
		Short: "Show and take out the files a run's agents and tools wrote",
		Long: `A run's workspace is the working directory its agent and tool nodes share.
Every visit that changed it is one commit ("writer visit 3", author Tether)
in the run's own git history, kept in the blob store.

  tether workspace RUN log          git log --stat of the run's snapshots
  tether workspace RUN diff         git diff of everything the run changed
                                    (--from SEQ: since checkpoint SEQ)
  tether workspace RUN export DIR   the files, with the history in DIR/.git
                                    (--no-history: the files only)

Fan-out branches each commit on a line of their own, named JOIN-VISIT/BRANCH
once they reached their join (gather-1/codex) and open/BRANCH before:

  tether workspace RUN log --all                every branch, as a graph
  tether workspace RUN diff --branch NAME       what the branch changed
                                                since its fan-out
  tether workspace RUN export DIR --branch NAME the branch's files

NAME is the branch's ref or, for the latest branch of that name, the node
its fan-out edge led to.

--at SEQ takes the workspace as checkpoint SEQ recorded it (default: the
latest checkpoint). log and diff run git (it must be installed).`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, action := args[0], args[1]
			ctx := cmd.Context()
			cp, st, err := a.workspaceAt(ctx, id, at, branch == "")
			if err != nil {
				return err
			}
			var br *runstore.BranchState
			if branch != "" {
				if br, err = findBranch(cp, branch); err != nil {
					return err
				}
				if br.Workspace == nil || br.Workspace.Commit == "" {
					return failedErr(fmt.Errorf("run %s: branch %s has no snapshot: it started from an empty workspace and changed nothing", id, branch))
				}
				st = br.Workspace
			}
			if all && (action != "log" || branch != "") {
				return usageErr("--all is for log, without --branch")
			}
			switch action {
			case "export":
				if len(args) != 3 {
					return usageErr("export needs a directory: tether workspace %s export DIR", id)
				}
				if err := workspace.Export(ctx, a.blobs, id, st, args[2], !noHistory, a.cfg.WorkspaceLimits); err != nil {
					return failedErr(fmt.Errorf("export the workspace of run %s: %w", id, err))
				}
				fmt.Fprintf(a.out, "run %s workspace exported to %s: %d files at %s\n", id, args[2], st.Files, short(st.Commit))
				return nil
			case "log", "diff":
				if len(args) != 2 {
					return usageErr("%s takes no argument", action)
				}
				gitArgs := []string{"log", "--stat", "--date=iso", "--end-of-options", "main"}
				if all {
					gitArgs = []string{"log", "--all", "--graph", "--decorate", "--stat", "--date=iso"}
				}
				if action == "diff" {
					base := st.Base
					switch {
					case br != nil && from != "":
						return usageErr("--from and --branch: a branch's diff is against its fan-out")
					case br != nil:
						base = br.Base
					case from != "":
						_, old, err := a.workspaceAt(ctx, id, from, true)
						if err != nil {
							return err
						}
						base = old.Commit
					}
					if base == "" {
						base = emptyTree
					}
					// base comes from the store: never let it be taken
					// for an option, even if a check upstream is lost.
					if !runstore.ValidObjectID(base) {
						return failedErr(fmt.Errorf("run %s: workspace base %q is not a git object id; the checkpoint was not written by tether", id, base))
					}
					gitArgs = []string{"diff", "--end-of-options", base, "main"}
				}
				var refs map[string]*runstore.WorkspaceState
				if all {
					refs = branchRefs(cp)
				}
				return a.git(ctx, id, st, refs, gitArgs...)
			default:
				return usageErr("unknown workspace action %q (want log, diff or export)", action)
			}
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "checkpoint sequence number (default: the latest)")
	cmd.Flags().StringVar(&from, "from", "", "diff: since checkpoint SEQ (default: since the run started)")
	cmd.Flags().BoolVar(&noHistory, "no-history", false, "export: the files only, without .git")
	cmd.Flags().BoolVar(&all, "all", false, "log: every fan-out branch too")
	cmd.Flags().StringVar(&branch, "branch", "", "diff, export, log: a fan-out branch's workspace (JOIN-VISIT/BRANCH, open/BRANCH or BRANCH)")
	return cmd
}

// findBranch is the branch of cp that name names: its ref, or the latest
// branch so named.
func findBranch(cp *runstore.Checkpoint, name string) (*runstore.BranchState, error) {
	var found *runstore.BranchState
	var known []string
	for _, b := range cpBranches(cp) {
		known = append(known, b.Ref())
		if b.Ref() == name || b.Name == name {
			found = b
		}
	}
	if found == nil {
		if len(known) == 0 {
			return nil, failedErr(fmt.Errorf("run %s has no fan-out branches at checkpoint %d", cp.RunID, cp.Seq))
		}
		return nil, failedErr(fmt.Errorf("run %s has no branch %q at checkpoint %d; its branches: %s", cp.RunID, name, cp.Seq, strings.Join(known, ", ")))
	}
	return found, nil
}

// branchRefs names every branch head of cp by its ref, for log --all.
func branchRefs(cp *runstore.Checkpoint) map[string]*runstore.WorkspaceState {
	refs := map[string]*runstore.WorkspaceState{}
	for _, b := range cpBranches(cp) {
		if b.Workspace != nil && b.Workspace.Commit != "" {
			refs[b.Ref()] = b.Workspace
		}
	}
	return refs
}

// cpBranches are the joined branches of cp, then the open ones.
func cpBranches(cp *runstore.Checkpoint) []*runstore.BranchState {
	var out []*runstore.BranchState
	for _, list := range [][]runstore.BranchState{cp.Joined, cp.Branches} {
		for i := range list {
			out = append(out, &list[i])
		}
	}
	return out
}

// workspaceAt is the checkpoint at (or the latest) and its workspace; with
// need, a checkpoint without a snapshot is an error.
func (a *app) workspaceAt(ctx context.Context, id, at string, need bool) (*runstore.Checkpoint, *runstore.WorkspaceState, error) {
	runs, err := a.store(ctx)
	if err != nil {
		return nil, nil, failedErr(err)
	}
	var cp *runstore.Checkpoint
	if at != "" {
		seq, err := atoi(at)
		if err != nil {
			return nil, nil, err
		}
		cp, err = runs.GetWhole(ctx, id, seq)
		if err != nil {
			return nil, nil, checkpointErr(id, seq, err)
		}
	} else if cp, err = runs.Latest(ctx, id); err != nil {
		return nil, nil, failedErr(fmt.Errorf("run %s: %w", id, err))
	}
	if need && (cp.Workspace == nil || cp.Workspace.Commit == "") {
		return nil, nil, failedErr(fmt.Errorf("run %s has no workspace snapshot at checkpoint %d: no visit changed its files yet", id, cp.Seq))
	}
	return cp, cp.Workspace, nil
}

// git runs plain git on a bare repository of the run's snapshots.
func (a *app) git(ctx context.Context, id string, st *runstore.WorkspaceState, branches map[string]*runstore.WorkspaceState, args ...string) error {
	bin, err := exec.LookPath("git")
	if err != nil {
		return failedErr(errors.New("git is not installed; `tether workspace RUN export DIR` writes the files and their history without it"))
	}
	tmp, err := os.MkdirTemp("", "tether-history-*")
	if err != nil {
		return failedErr(err)
	}
	defer os.RemoveAll(tmp)
	gitDir := filepath.Join(tmp, "repo.git")
	if err := workspace.HistoryWithBranches(ctx, a.blobs, id, st, branches, gitDir, a.cfg.WorkspaceLimits); err != nil {
		return failedErr(fmt.Errorf("read the workspace history of run %s: %w", id, err))
	}
	c := exec.CommandContext(ctx, bin, append([]string{"--no-pager", "--git-dir", gitDir}, args...)...)
	// Into a pipe or a file the output is exact (a diff applies with git
	// apply); on a terminal it is escaped, as all output is, since the
	// files are the agents' (git then prints it without colour).
	c.Stdout, c.Stderr = a.raw, a.errOut
	if a.rawTerminal {
		c.Stdout = a.out
	}
	c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if err := c.Run(); err != nil {
		return failedErr(fmt.Errorf("git %s: %w", args[0], err))
	}
	return nil
}

// importWorkspace makes the first snapshot of a new run's workspace from
// src, in the run store.
func (a *app) importWorkspace(ctx context.Context, id string, src workspace.Source) (*runstore.WorkspaceState, error) {
	if _, err := a.store(ctx); err != nil {
		return nil, failedErr(err)
	}
	st, rep, err := workspace.Import(ctx, a.blobs, id, src, a.cfg.WorkspaceLimits, time.Now())
	if err != nil {
		return nil, failedErr(fmt.Errorf("import the workspace from %s: %w", src, err))
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(a.errOut, "workspace: left out", n)
	}
	fmt.Fprintf(a.out, "workspace from %s: %d files, %d bytes (%s)\n", src, st.Files, st.Bytes, short(st.Commit))
	return st, nil
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	if commit == "" {
		return "empty"
	}
	return commit
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// requireClosed refuses to act on a run Temporal still runs.
func (a *app) requireClosed(ctx context.Context, id, what string) error {
	d, err := a.describe(ctx, id)
	if err != nil {
		return failedErr(fmt.Errorf("describe run %s: %w", id, err))
	}
	if statusOf(d) == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return usageErr("run %s is still open; %s needs a closed run (cancel it with `temporal workflow cancel --workflow-id %s` first)", id, what, id)
	}
	return nil
}

// start begins a new execution of run id from cp. Its details in the
// Web UI say where it continues from, and the corrected graph it runs
// when one was given (the checkpoint in its input holds the graph and the
// edit itself).
func (a *app) start(ctx context.Context, id string, cp *runstore.Checkpoint) error {
	c, err := a.temporal()
	if err != nil {
		return failedErr(err)
	}
	var details strings.Builder
	if l := cp.Lineage; l != nil {
		fmt.Fprintf(&details, "A %s of run `%s` from checkpoint %d.\n", l.Kind, l.Run, l.Seq)
	}
	if n := len(cp.GraphEdits); n > 0 && cp.GraphEdits[n-1].Seq == cp.Seq {
		e := cp.GraphEdits[n-1]
		fmt.Fprintf(&details, "\nCorrected graph from `%s` (sha256 %s): %s.\n", e.File, e.Digest, strings.Join(e.Changes, "; "))
		if e.Rerun != "" {
			fmt.Fprintf(&details, "Node `%s` runs again.\n", e.Rerun)
		}
	}
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       runapi.RunWorkflowID(id),
		TaskQueue:                runapi.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// A run opened meanwhile is refused, never taken for this one.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticDetails:                            details.String(),
	}, runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Checkpoint: cp})
	if err != nil {
		if cp.Seq == 0 {
			if taken := alreadyStarted(id, err); taken != nil {
				return taken
			}
		}
		return failedErr(fmt.Errorf("start run %s: %w", id, err))
	}
	return nil
}

// resumableCheckpoint is what a closed run continues from: the checkpoint a
// fail-stop carried in its failure details (it may hold a slot the run
// store never received), else the run store's latest.
func (a *app) resumableCheckpoint(ctx context.Context, id string) (*runstore.Checkpoint, string, error) {
	c, err := a.temporal()
	if err != nil {
		return nil, "", failedErr(err)
	}
	runs, err := a.store(ctx)
	if err != nil {
		return nil, "", failedErr(err)
	}
	latest, lerr := runs.Latest(ctx, id)
	if lerr != nil && !errors.Is(lerr, runstore.ErrNoCheckpoint) {
		return nil, "", failedErr(lerr)
	}
	werr := c.GetWorkflow(ctx, id, "").Get(ctx, nil)
	if appErr, stopped := runapi.StopError(werr); stopped && appErr.HasDetails() {
		var cp runstore.Checkpoint
		if err := appErr.Details(&cp); err == nil {
			if latest != nil && latest.Seq > cp.Seq {
				cp.Seq = latest.Seq
			}
			from := "the fail-stop's own checkpoint"
			if appErr.Type() == runapi.ErrTypeBudget {
				from = "the checkpoint of its budget stop"
			}
			return &cp, from, nil
		}
	}
	if latest == nil {
		return nil, "", failedErr(fmt.Errorf("run %s has no checkpoint to resume from", id))
	}
	if latest.Status == runstore.StatusCompleted {
		return nil, "", usageErr("run %s completed; nothing to resume (fork it to run again)", id)
	}
	graphFrom, err := a.trustedGraph(ctx, id, latest)
	if err != nil {
		return nil, "", err
	}
	return latest, fmt.Sprintf("checkpoint %d (graph from %s)", latest.Seq, graphFrom), nil
}

// onRun is the RunE of a command about one run (args[0]): parse, if set,
// checks the command's own arguments first; when verb is set the run must
// be closed (requireClosed words its refusal with verb); then the run
// store is opened, a failure to open it failing the command, and body
// does the rest.
func (a *app) onRun(verb string, parse func() error, body func(ctx context.Context, id string, runs *runstore.Store) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		id, ctx := args[0], cmd.Context()
		if parse != nil {
			if err := parse(); err != nil {
				return err
			}
		}
		if verb != "" {
			if err := a.requireClosed(ctx, id, verb); err != nil {
				return err
			}
		}
		runs, err := a.store(ctx)
		if err != nil {
			return failedErr(err)
		}
		return body(ctx, id, runs)
	}
}

func (a *app) resumeCmd() *cobra.Command {
	var (
		follow    bool
		maxTokens int64
		maxCost   float64
		onNode    string
		fix       graphFix
	)
	cmd := &cobra.Command{
		Use:   "resume RUN [--graph FILE]",
		Short: "Continue a failed run from its checkpoint in a new execution, with a corrected graph if given",
		Long: `Continue a stopped run (failed, canceled, over budget) from its checkpoint
in a new execution, with its files and conversations.

With --graph FILE it goes on with a corrected graph: FILE is validated as
tether run validates it and checked against the checkpoint (the nodes it
still needs must be there, of the same kind; a persist node's conversation
stays on its backend), and the change is recorded in the run (tether
status, the console, and the new execution's input in Temporal).

A run that failed choosing where to go after a visit ended (an edge's
condition or mapping failed, or no edge matched) goes on from that visit's
output: the node is not visited again, so a tool's effects are not
repeated, unless the corrected graph changed the node or --rerun asks.
Resumed with the same graph and without --rerun, such a run would fail the
same way, and is refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			msg, err := a.resume(cmd.Context(), id, onNode, maxTokens, maxCost, fix)
			if err != nil {
				return err
			}
			return a.printAndFollow(cmd.Context(), id, msg, follow)
		},
	}
	cmd.Flags().BoolVar(&follow, "follow", false, "print progress until the run ends")
	cmd.Flags().Int64Var(&maxTokens, "max-tokens", 0, "set the run's max_tokens budget (with --node, that node's) before resuming")
	cmd.Flags().Float64Var(&maxCost, "max-cost-usd", 0, "set the run's max_cost_usd budget (with --node, that node's) before resuming")
	cmd.Flags().StringVar(&onNode, "node", "", "with --max-tokens or --max-cost-usd: the node whose budget to set")
	fixFlags(cmd, &fix)
	return cmd
}

// fixFlags are --graph and --rerun, of the commands that continue a run.
func fixFlags(cmd *cobra.Command, fix *graphFix) {
	cmd.Flags().StringVar(&fix.path, "graph", "", "go on with this corrected graph file (validated, and checked against the checkpoint)")
	cmd.Flags().BoolVar(&fix.rerun, "rerun", false, "visit again the node whose edges failed after its visit ended (by default its output is taken again)")
}

// resume starts a new execution of closed run id from the checkpoint it
// stopped at, with a budget raised first when asked: `tether resume`, and
// the console's Resume.
func (a *app) resume(ctx context.Context, id, onNode string, maxTokens int64, maxCost float64, fix graphFix) (string, error) {
	if err := a.requireClosed(ctx, id, "resume"); err != nil {
		return "", err
	}
	cp, from, err := a.resumableCheckpoint(ctx, id)
	if err != nil {
		return "", err
	}
	if e := cp.Ended; e != nil && fix.path == "" && !fix.rerun {
		return "", usageErr("run %s failed after visit %d of %s ended (%s); resumed with the same graph it would choose from the same output and fail the same way. Correct the graph and go on with it: tether resume %s --graph FILE (tether graph --run %s --format yaml prints the run's graph), or visit %s again: tether resume %s --rerun", id, e.Visit, e.Node, cp.Error, id, id, e.Node, id)
	}
	if err := a.applyGraphFix(fix, cp, "resume", true); err != nil {
		return "", err
	}
	if err := raiseBudget(cp, onNode, maxTokens, maxCost); err != nil {
		return "", err
	}
	if msg := runapi.OverBudget(cp); msg != "" {
		return "", usageErr("run %s: %s, so it would stop again before its next visit; raise that budget: `tether resume %s --max-tokens N` or `--max-cost-usd X` (add --node NODE for a node's budget)", id, msg, id)
	}
	cp.Lineage = &runstore.Lineage{Run: id, Seq: cp.Seq, Kind: "resume"}
	if err := a.start(ctx, id, cp); err != nil {
		return "", err
	}
	return fmt.Sprintf("run %s resumed from %s%s\n", id, from, fixNote(cp, fix)), nil
}

// fixNote is what a command that continued a run says of --graph and
// --rerun: the changes, and whether the ended visit runs again.
func fixNote(cp *runstore.Checkpoint, fix graphFix) string {
	var b strings.Builder
	if n := len(cp.GraphEdits); fix.path != "" && n > 0 {
		e := cp.GraphEdits[n-1]
		fmt.Fprintf(&b, "\n  with the corrected graph %s: %s", e.File, strings.Join(e.Changes, "; "))
		if e.Rerun != "" {
			fmt.Fprintf(&b, "\n  node %s is visited again", e.Rerun)
		}
	}
	if e := cp.Ended; e != nil {
		fmt.Fprintf(&b, "\n  the output of %s visit %d is taken again (not visited again); --rerun visits it again", e.Node, e.Visit)
	}
	return b.String()
}

// raiseBudget sets the budget a resumed run continues under: the run's,
// or with node that node's. A budget stop tells which one was spent.
func raiseBudget(cp *runstore.Checkpoint, node string, tokens int64, cost float64) error {
	if tokens < 0 || cost < 0 {
		return usageErr("--max-tokens and --max-cost-usd take positive numbers")
	}
	if tokens == 0 && cost == 0 {
		if node != "" {
			return usageErr("--node needs --max-tokens or --max-cost-usd")
		}
		return nil
	}
	g, err := runapi.GraphOf(cp)
	if err != nil {
		return failedErr(err)
	}
	b := &g.Budget
	if node != "" {
		n, ok := g.Node(node)
		if !ok {
			return usageErr("--node %s: the run's graph has no such node", node)
		}
		b = &n.Budget
	}
	if *b == nil {
		*b = &graph.Budget{}
	} else {
		c := **b
		*b = &c
	}
	if tokens > 0 {
		(*b).MaxTokens = tokens
	}
	if cost > 0 {
		(*b).MaxCostUSD = cost
	}
	if err := runapi.SetGraph(cp, g); err != nil {
		return failedErr(err)
	}
	return nil
}

func (a *app) rewindCmd() *cobra.Command {
	var (
		to     string
		seq    int64
		follow bool
		fix    graphFix
	)
	cmd := &cobra.Command{
		Use:   "rewind RUN --to SEQ [--graph FILE]",
		Short: "Rewind a closed run to an earlier checkpoint and run on from there",
		Long: `Rewind a closed run to checkpoint SEQ (see tether checkpoints RUN) and run on
from there, its files and conversations with it.

A new checkpoint, a copy of SEQ, is written first; then the blobs (session
blobs, workspace packs) that only the checkpoints after SEQ named are
deleted. Those checkpoints are then dropped by this rewind: tether
checkpoints marks them, and rewind --to, fork --at and workspace --at refuse
them. A checkpoint at which the run had ended is refused too: nothing would
run (fork the run instead). The rule is in docs/storage.md.

A persist node continues the conversation SEQ names when SEQ's slot or one
of the node's last few slots kept for rewinds (retained_sessions) is it;
otherwise it starts fresh (it never resumes a conversation it cannot
restore).

With --graph FILE the run goes on from SEQ with a corrected graph, checked
against SEQ as tether resume --graph checks it, and recorded in the run.`,
		Args: cobra.ExactArgs(1),
		RunE: a.onRun("rewind", func() (err error) { seq, err = atoi(to); return err }, func(ctx context.Context, id string, runs *runstore.Store) error {
			msg, warnings, err := a.rewind(ctx, id, seq, runs, fix)
			for _, w := range warnings {
				fmt.Fprintln(a.errOut, w)
			}
			if err != nil {
				return err
			}
			return a.printAndFollow(ctx, id, msg, follow)
		}),
	}
	cmd.Flags().StringVar(&to, "to", "", "checkpoint sequence number to rewind to (required)")
	_ = cmd.MarkFlagRequired("to")
	cmd.Flags().BoolVar(&follow, "follow", false, "print progress until the run ends")
	fixFlags(cmd, &fix)
	return cmd
}

// rewind rewinds closed run id to checkpoint seq and starts it again from
// there: `tether rewind`, and the console's Rewind. The warnings name the
// blobs it could not delete.
func (a *app) rewind(ctx context.Context, id string, seq int64, runs *runstore.Store, fix graphFix) (string, []string, error) {
	var opts []runstore.RewindOption
	g, ok, err := a.temporalGraph(ctx, id)
	if err != nil {
		return "", nil, failedErr(err)
	}
	var edited *runstore.Checkpoint
	if fix.path != "" || fix.rerun {
		// Checked against the checkpoint rewound to, before anything is
		// written: a graph that cannot take over leaves the run as it is.
		target, err := runs.GetWhole(ctx, id, seq)
		if err != nil {
			return "", nil, checkpointErr(id, seq, err)
		}
		if ok {
			if err := runapi.SetGraph(target, g); err != nil {
				return "", nil, failedErr(err)
			}
		}
		if err := a.applyGraphFix(fix, target, "rewind", true); err != nil {
			return "", nil, err
		}
		if g, err = runapi.GraphOf(target); err != nil {
			return "", nil, failedErr(err)
		}
		edited, ok = target, true
	}
	if ok {
		b, err := json.Marshal(g)
		if err != nil {
			return "", nil, failedErr(err)
		}
		opts = append(opts, runstore.RewindGraph(b))
	}
	rep, err := runs.Rewind(ctx, id, seq, opts...)
	if err != nil {
		return "", nil, checkpointErr(id, seq, err)
	}
	var warnings []string
	for _, e := range rep.Errors {
		warnings = append(warnings, fmt.Sprintf("warning: %v (tether delete removes it with the run)", e))
	}
	cp := rep.Checkpoint
	if edited != nil {
		cp.GraphEdits, cp.Ended = edited.GraphEdits, edited.Ended
		if n := len(cp.GraphEdits); fix.path != "" && n > 0 {
			cp.GraphEdits[n-1].Seq = cp.Seq
		}
	}
	if err := a.start(ctx, id, cp); err != nil {
		return "", warnings, err
	}
	return fmt.Sprintf("run %s rewound to checkpoint %d (new checkpoint %d, %s dropped)%s\n", id, seq, cp.Seq, plural(len(rep.Dropped), "blob"), fixNote(cp, fix)), warnings, nil
}

func (a *app) forkCmd() *cobra.Command {
	var (
		at     string
		newID  string
		follow bool
		fix    graphFix
	)
	cmd := &cobra.Command{
		Use:   "fork RUN [--graph FILE]",
		Short: "Start a new run from a checkpoint of another run",
		Long: `Start a new run from checkpoint --at (default: the latest) of RUN. The new
run keeps the outputs and visits but no session refs of either kind: its
persist nodes start their own conversations.

With --graph FILE the new run runs that graph, checked against the
checkpoint as tether resume --graph checks it (its name may differ).`,
		Args: cobra.ExactArgs(1),
		RunE: a.onRun("", nil, func(ctx context.Context, id string, runs *runstore.Store) error {
			var seq int64
			if at != "" {
				var err error
				if seq, err = atoi(at); err != nil {
					return err
				}
			}
			forked, msg, err := a.fork(ctx, id, seq, newID, runs, fix)
			if err != nil {
				return err
			}
			return a.printAndFollow(ctx, forked, msg, follow)
		}),
	}
	cmd.Flags().StringVar(&at, "at", "", "checkpoint sequence number (default: latest)")
	cmd.Flags().StringVar(&newID, "id", "", "ID of the new run")
	cmd.Flags().BoolVar(&follow, "follow", false, "print progress until the run ends")
	fixFlags(cmd, &fix)
	return cmd
}

// fork starts run newID (a new id when empty) from checkpoint seq of run
// id (0: its latest) with a copy of its files: `tether fork`, and the
// console's Fork.
func (a *app) fork(ctx context.Context, id string, seq int64, newID string, runs *runstore.Store, fix graphFix) (string, string, error) {
	var (
		src *runstore.Checkpoint
		err error
	)
	if seq > 0 {
		if src, err = runs.GetWhole(ctx, id, seq); err != nil {
			return "", "", checkpointErr(id, seq, err)
		}
	} else if src, err = runs.Latest(ctx, id); err != nil {
		return "", "", failedErr(fmt.Errorf("run %s: %w", id, err))
	}
	// A fork runs the source run's graph as Temporal recorded it, while
	// Temporal holds that run; the bucket's copy otherwise.
	if _, err := a.trustedGraph(ctx, id, src); err != nil {
		return "", "", err
	}
	cp := runstore.Fork(src)
	cp.Seq = src.Seq // what the graph takes over from
	err = a.applyGraphFix(fix, cp, "fork", false)
	cp.Seq = 0
	if err != nil {
		return "", "", err
	}
	if newID == "" {
		newID = newRunID(cp.GraphName())
	} else if err := runstore.ValidateRunID(newID); err != nil {
		return "", "", usageErr("--id: %v", err)
	}
	if err := a.claimRunID(ctx, newID); err != nil {
		return "", "", err
	}
	cp.RunID = newID
	// The fork starts from the same files, its branches' too (a fork
	// taken inside a fan-out goes on with each branch's), in a copy of
	// its own.
	if err := runs.CopyWorkspaces(ctx, id, newID, cp); err != nil {
		return "", "", failedErr(fmt.Errorf("fork the workspace of run %s: %w", id, err))
	}
	if err := a.start(ctx, newID, cp); err != nil {
		return "", "", err
	}
	return newID, fmt.Sprintf("run %s forked from %s checkpoint %d%s\n  web ui: %s\n", newID, id, src.Seq, fixNote(cp, fix), a.cfg.RunURL(newID)), nil
}

func (a *app) deleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete RUN",
		Short: "Delete a closed run: its checkpoints, every blob under it, and its executions in Temporal, which frees its id",
		Args:  cobra.ExactArgs(1),
		RunE: a.onRun("delete", nil, func(ctx context.Context, id string, runs *runstore.Store) error {
			msg, err := a.deleteRun(ctx, id, runs)
			if err != nil {
				return err
			}
			fmt.Fprint(a.out, msg)
			return nil
		}),
	}
}

// deleteRun deletes closed run id's blobs and its executions in Temporal:
// `tether delete`, and the console's Delete (the caller checked the run
// is closed).
func (a *app) deleteRun(ctx context.Context, id string, runs *runstore.Store) (string, error) {
	if err := a.requireKnown(ctx, id, runs); err != nil {
		return "", err
	}
	rep, err := runs.DeleteRun(ctx, id)
	if err != nil {
		return "", failedErr(fmt.Errorf("delete run %s: %w", id, err))
	}
	// The id is free again only once Temporal forgets the run too.
	execs, err := a.deleteExecutions(ctx, id)
	if err != nil {
		return "", failedErr(fmt.Errorf("run %s: its objects are deleted from the store, but %w; its id stays taken until Temporal's retention removes it", id, err))
	}
	return fmt.Sprintf("run %s deleted: %d checkpoint(s), %d session blob(s), %d workspace pack(s), %d path block(s), %d object(s) in all; %d execution(s) in Temporal\n", id, rep.Checkpoints, rep.Sessions, rep.WorkspacePacks, rep.PathBlocks, rep.Total, execs), nil
}

// requireKnown refuses a run neither the run store nor Temporal knows: a
// mistyped id is said, not deleted "successfully".
func (a *app) requireKnown(ctx context.Context, id string, runs *runstore.Store) error {
	infos, err := runs.List(ctx, id)
	if err != nil {
		return failedErr(fmt.Errorf("run %s: list its checkpoints: %w", id, err))
	}
	if len(infos) > 0 {
		return nil
	}
	d, err := a.describe(ctx, id)
	if err != nil {
		return failedErr(fmt.Errorf("describe run %s: %w", id, err))
	}
	if d == nil {
		return usageErr("no run %q: the run store %s has no checkpoint of it and Temporal at %s does not know it; check the id (tether list)", id, a.cfg.BlobURL, a.cfg.TemporalAddress)
	}
	return nil
}

func (a *app) checkpointsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "checkpoints RUN",
		Short: "List a run's checkpoints",
		Args:  cobra.ExactArgs(1),
		RunE: a.onRun("", nil, func(ctx context.Context, id string, runs *runstore.Store) error {
			infos, err := runs.List(ctx, id)
			if err != nil {
				return failedErr(err)
			}
			if len(infos) == 0 {
				return failedErr(fmt.Errorf("run %s has no checkpoints in %s", id, a.cfg.BlobURL))
			}
			drops, err := runs.Drops(ctx, id)
			if err != nil {
				return failedErr(err)
			}
			fmt.Fprintf(a.out, "%-5s %-17s %-20s %-7s %s\n", "SEQ", "STATUS", "NEXT", "VISITS", "SESSIONS")
			for _, info := range infos {
				cp, err := runs.Get(ctx, id, info.Seq)
				if err != nil {
					return failedErr(err)
				}
				var next []string
				for _, c := range cp.Cursor {
					next = append(next, c.Node)
				}
				var sess []string
				for _, k := range slices.Sorted(maps.Keys(cp.NodeSessions)) {
					sess = append(sess, k+"="+cp.NodeSessions[k].SessionID)
				}
				if cp.Pause != nil {
					sess = append(sess, "paused:"+cp.Pause.NodeID)
				}
				line := fmt.Sprintf("%-5d %-17s %-20s %-7d %s", cp.Seq, cp.Status, strings.Join(next, ","), cp.PathTotal, strings.Join(sess, " "))
				for _, d := range drops {
					if d.Covers(cp.Seq) {
						line = fmt.Sprintf("%-5d %-17s dropped by the rewind to %d (checkpoint %d)", cp.Seq, "dropped", d.To, d.At)
						break
					}
				}
				fmt.Fprintln(a.out, strings.TrimRight(line, " "))
			}
			return nil
		}),
	}
}

// printAndFollow prints msg, what a command did to run id, and with
// --follow (follow) prints the run's progress until it ends.
func (a *app) printAndFollow(ctx context.Context, id, msg string, follow bool) error {
	fmt.Fprint(a.out, msg)
	if !follow {
		return nil
	}
	return a.follow(ctx, id)
}

package cli

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

func (a *app) runCmd() *cobra.Command {
	var (
		inputs []string
		id     string
		follow bool
		wsFrom string
		wsRef  string
		hbTO   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Start a run of a graph file",
		Long: `Start a run of the graph in FILE and print its run ID.

With --follow, print a line per node visit (status and duration) and each
question as it arrives, until the run ends; the exit code is then 0 when the
run completed and 1 when it failed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := a.loadGraph(args[0])
			if err != nil {
				return err
			}
			// Checked before anything starts: a missing required input, a
			// name the graph does not declare, a value not of its type.
			in, notes, err := g.RunInputs(inputs)
			if err != nil {
				return usageErr("%v", err)
			}
			for _, n := range notes {
				fmt.Fprintln(a.errOut, "note:", n)
			}
			if id == "" {
				id = newRunID(g.Name)
			} else if err := runstore.ValidateRunID(id); err != nil {
				return usageErr("--id: %v", err)
			}
			c, err := a.temporal()
			if err != nil {
				return failedErr(err)
			}
			ctx := cmd.Context()
			if err := a.claimRunID(ctx, id); err != nil {
				return err
			}
			if wsRef != "" && wsFrom == "" {
				return usageErr("--ref needs --workspace: the repository the ref is in")
			}
			if wsFrom == "" && g.Workspace != nil {
				// The graph names its workspace, from its inputs.
				from, ref, err := g.Workspace.Render(g.WithDefaults(in))
				if err != nil {
					return usageErr("%s: %v", args[0], err)
				}
				wsFrom, wsRef = from, ref
			}
			var ws *runstore.WorkspaceState
			if wsFrom != "" {
				if ws, err = a.importWorkspace(ctx, id, workspace.Source{From: wsFrom, Ref: wsRef}); err != nil {
					return err
				}
			}
			_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID:                       runapi.RunWorkflowID(id),
				TaskQueue:                runapi.TaskQueue,
				WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
				WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
				// Without it, a taken id returns the run that has it, as
				// if this one had started.
				WorkflowExecutionErrorWhenAlreadyStarted: true,
				Memo:                                     map[string]any{"graph": g.Name},
				StaticSummary:                            runSummary(g.Name, in),
				StaticDetails:                            runDetails(args[0], in, wsFrom, wsRef),
			}, runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: g, Inputs: in, Workspace: ws,
				Options: runapi.Options{HeartbeatTimeout: hbTO}})
			if err != nil {
				if taken := alreadyStarted(id, err); taken != nil {
					return taken
				}
				return failedErr(fmt.Errorf("start run: %w", err))
			}
			fmt.Fprintf(a.out, "run %s started (graph %s)\n", id, g.Name)
			fmt.Fprintf(a.out, "  web ui: %s\n", a.cfg.RunURL(id))
			if !follow {
				return nil
			}
			return a.follow(ctx, id)
		},
	}
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "run input as NAME=VALUE (repeatable; VALUE is text unless the graph declares the input's type: number, boolean or json)")
	cmd.Flags().StringVar(&id, "id", "", "run ID (default: <graph name>-<ulid>)")
	cmd.Flags().BoolVar(&follow, "follow", false, "print progress until the run ends")
	cmd.Flags().StringVar(&wsFrom, "workspace", "", "start the run's workspace from this directory, or git repository path or URL (default: empty)")
	cmd.Flags().DurationVar(&hbTO, "heartbeat-timeout", 0, "how soon a visit whose worker stopped answering starts again on another worker (default 30s)")
	cmd.Flags().StringVar(&wsRef, "ref", "", "with --workspace: the branch, tag or commit of the repository (default: the directory as it is)")
	return cmd
}

// runSummary is a run's one line in the Web UI and `temporal workflow
// describe`: the graph and its inputs.
func runSummary(graphName string, inputs map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(inputs)) {
		v := fmt.Sprint(inputs[k])
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		parts = append(parts, k+"="+strings.ReplaceAll(v, "\n", " "))
	}
	s := "tether · " + graphName
	if len(parts) > 0 {
		s += " · " + strings.Join(parts, " ")
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// runDetails says where a run came from, for the Web UI.
func runDetails(file string, inputs map[string]any, wsFrom, wsRef string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Graph file: `%s`\n", file)
	if wsFrom != "" {
		fmt.Fprintf(&b, "\nWorkspace from: `%s`", wsFrom)
		if wsRef != "" {
			fmt.Fprintf(&b, " at `%s`", wsRef)
		}
		b.WriteString("\n")
	}
	if len(inputs) > 0 {
		b.WriteString("\nInputs:\n")
		for _, k := range slices.Sorted(maps.Keys(inputs)) {
			v := fmt.Sprint(inputs[k])
			if len(v) > 500 {
				v = v[:500] + "…"
			}
			fmt.Fprintf(&b, "- %s: %s\n", k, v)
		}
	}
	return b.String()
}

// newRunID is the graph's name, reduced to the run-id alphabet, plus a
// ULID.
func newRunID(graphName string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9', r == '-', r == '_', r == '.':
			return r
		case 'A' <= r && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, graphName)
	name = strings.Trim(name, ".-")
	if len(name) > 40 {
		name = name[:40]
	}
	if name == "" {
		name = "run"
	}
	return name + "-" + strings.ToLower(ulid.Make().String())
}

// loadGraph parses and validates a graph file; problems exit 2.
func (a *app) loadGraph(path string) (*graph.Graph, error) {
	g, err := graph.ParseFile(path)
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	probs := graph.Validate(g)
	if probs.HasErrors() {
		return nil, &exitError{code: ExitUsage, err: fmt.Errorf("%s has problems; run `tether validate %s`:\n%s", path, path, probs.Format(path))}
	}
	for _, p := range probs {
		if p.Severity == graph.SeverityWarning {
			fmt.Fprintln(a.errOut, p.Format(path))
		}
	}
	return g, nil
}

// finish says how the followed run ended; withUsage adds what it cost,
// unless the lines before said it already.
func (a *app) finish(id string, result *runapi.GraphRunResult, err error, withUsage bool) error {
	if err != nil {
		switch appErr, _ := runapi.StopError(err); {
		case appErr != nil && appErr.Type() == runapi.ErrTypeBudget:
			fmt.Fprintf(a.out, "run %s stopped: %s\n", id, appErr.Message())
		case appErr != nil:
			fmt.Fprintf(a.out, "run %s stopped resumably: %s\n  continue it with: tether resume %s\n", id, runapi.ErrorText(appErr), id)
		default:
			fmt.Fprintf(a.out, "run %s failed: %s\n", id, runapi.ErrorText(err))
		}
		return &exitError{code: ExitFailed, err: fmt.Errorf("run %s failed", id)}
	}
	var path []string
	for _, s := range result.Path {
		path = append(path, s.Node)
	}
	fmt.Fprintf(a.out, "run %s completed at %s after %d visits\n", id, result.EndNode, result.Visits)
	if withUsage && !result.Usage.IsZero() {
		fmt.Fprintf(a.out, "  usage: %s\n", usageDetail(result.Usage))
	}
	fmt.Fprintf(a.out, "  path: %s\n", strings.Join(path, " → "))
	fmt.Fprintf(a.out, "  web ui: %s\n", a.cfg.RunURL(id))
	return nil
}

// atoi parses a positive integer flag value.
func atoi(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, usageErr("%q is not a positive number", s)
	}
	return n, nil
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/internal/runlist"
	"github.com/tether-run/tether/internal/runstore"
)

// listPage is how many executions one visibility call of `tether list`
// reads.
const listPage = 100

func (a *app) listCmd() *cobra.Command {
	var (
		f       runlist.Filter
		waiting bool
		asJSON  bool
		limit   int
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, one line per run, newest first, with the console's filters",
		Long: `List the runs Temporal's visibility knows, newest first: one line per run,
as its latest execution stands (a run resumed, rewound or continued as new
has several executions, and is listed once). The filters are the console's
runs page's: --status, --graph, --node, --backend, --id (a run id or the
start of one), and --waiting for the runs waiting for a person.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if waiting {
				if f.Status != "" && f.Status != runstore.StatusWaiting {
					return usageErr("--waiting lists the runs waiting for a person; it cannot go with --status %s", f.Status)
				}
				f.Status = runstore.StatusWaiting
			}
			if err := f.Check(); err != nil {
				return usageErr("%v", err)
			}
			if limit < 1 {
				return usageErr("--limit takes a positive number")
			}
			if _, err := a.temporal(); err != nil {
				return failedErr(err)
			}
			rows, more, err := listRuns(cmd.Context(), a, f, limit)
			if err != nil {
				return failedErr(fmt.Errorf("list runs from Temporal's visibility at %s: %w", a.cfg.TemporalAddress, err))
			}
			if asJSON {
				if rows == nil {
					rows = []runlist.Row{}
				}
				// Exact, for programs (a.out escapes for a terminal).
				enc := json.NewEncoder(a.raw)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			a.printRuns(rows)
			if more {
				fmt.Fprintf(a.errOut, "(the first %d; --limit N lists more)\n", limit)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.Status, "status", "", "only runs with this status: "+strings.Join(runlist.Statuses, ", "))
	cmd.Flags().StringVar(&f.Graph, "graph", "", "only runs of this graph (its name)")
	cmd.Flags().StringVar(&f.Node, "node", "", "only runs at this node")
	cmd.Flags().StringVar(&f.Backend, "backend", "", "only runs that use this backend")
	cmd.Flags().StringVar(&f.Q, "id", "", "only the run with this id, or whose id starts with it")
	cmd.Flags().BoolVar(&waiting, "waiting", false, "only runs waiting for a person (--status waiting)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as a JSON array")
	cmd.Flags().IntVar(&limit, "limit", 50, "list at most this many runs")
	return cmd
}

// listRuns reads up to limit runs matching f; more says there are more.
func listRuns(ctx context.Context, a *app, f runlist.Filter, limit int) (rows []runlist.Row, more bool, err error) {
	var token []byte
	for {
		pg, err := runlist.List(ctx, a.client, f, token, listPage)
		if err != nil {
			return nil, false, err
		}
		for _, r := range pg.Rows {
			if len(rows) == limit {
				return rows, true, nil
			}
			rows = append(rows, r)
		}
		if token = pg.Next; len(token) == 0 {
			return rows, false, nil
		}
	}
}

// printRuns prints runs as a table.
func (a *app) printRuns(rows []runlist.Row) {
	if len(rows) == 0 {
		fmt.Fprintln(a.out, "no runs match")
		return
	}
	fmt.Fprintf(a.out, "%-17s %-40s %-20s %-16s %-20s %s\n", "STATUS", "RUN", "GRAPH", "NODE", "STARTED", "EXECUTIONS")
	for _, r := range rows {
		node := r.Node
		if !r.Open() {
			node = "-"
		}
		fmt.Fprintf(a.out, "%-17s %-40s %-20s %-16s %-20s %d\n", r.Status, r.ID, r.Graph, node, r.Started.UTC().Format(time.DateTime), r.Executions)
	}
}

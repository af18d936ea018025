package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/excerpt"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/health"
	"github.com/tether-run/tether/internal/render"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// quietLogger keeps the Temporal client's info chatter off the terminal.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(msg string, kv ...any) {
	fmt.Fprint(os.Stderr, render.Terminal(fmt.Sprintln(append([]any{"temporal client:", msg}, kv...)...)))
}

var _ log.Logger = quietLogger{}

func (a *app) queryState(ctx context.Context, id string) (*runapi.State, error) {
	c, err := a.temporal()
	if err != nil {
		return nil, err
	}
	v, err := c.QueryWorkflow(ctx, id, "", runapi.QueryState)
	if err != nil {
		return nil, err
	}
	var st runapi.State
	if err := v.Get(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

// describe returns the run's Temporal status, or "" when Temporal does not
// know the run (never started there, or past retention).
func (a *app) describe(ctx context.Context, id string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	c, err := a.temporal()
	if err != nil {
		return nil, err
	}
	d, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, nil
		}
		return nil, err
	}
	return d.RawResponse, nil
}

// statusOf is a described run's status: UNSPECIFIED for a run Temporal
// does not know (a nil description).
func statusOf(d *workflowservice.DescribeWorkflowExecutionResponse) enumspb.WorkflowExecutionStatus {
	return d.GetWorkflowExecutionInfo().GetStatus()
}

func (a *app) statusCmd() *cobra.Command {
	var asJSON, pending, follow bool
	cmd := &cobra.Command{
		Use:   "status RUN",
		Short: "Show a run: status, current node, visits, pending questions, path",
		Long: `Show a run. A live run is asked through the workflow's "state" query;
when no worker is up, or Temporal no longer holds the run, the latest
checkpoint in the run store answers instead, and the output says so.
Temporal unreachable is a failure (exit 1), after what the store holds.

With --follow, an open run is followed as tether run --follow does: each
visit so far, then each new one, until the run ends (Ctrl-C detaches).
The exit code is the run's whenever it has ended: 0 completed, 1 failed,
canceled, terminated or timed out, whether it ended before or while it
was followed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			ctx := cmd.Context()
			if follow {
				if d, err := a.describe(ctx, id); err == nil && statusOf(d) == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
					return a.follow(ctx, id)
				}
			}
			l, err := a.loadState(ctx, id)
			if err != nil {
				return err
			}
			st := l.st
			switch {
			case pending:
				for _, q := range st.Questions {
					fmt.Fprintln(a.out, q.ID)
				}
			case asJSON:
				// Exact, for programs: a person's terminal gets the
				// escaped text of the commands without --json.
				enc := json.NewEncoder(a.raw)
				enc.SetIndent("", "  ")
				if err := enc.Encode(jsonState(st)); err != nil {
					return err
				}
			default:
				a.printState(st, l.source, l.unanswerable())
				if l.open() {
					a.printRunning(pendingProgress(l.described))
				}
			}
			if l.workers.Temporal != nil {
				return failedErr(fmt.Errorf("%s; what is shown is the run store's, which may be behind the run", l.workers.String()))
			}
			if follow {
				return endedErr(id, st.Status)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the state as JSON")
	cmd.Flags().BoolVar(&pending, "pending", false, "print only the ids of pending questions, one per line (for scripts)")
	cmd.Flags().BoolVar(&follow, "follow", false, "follow an open run until it ends")
	return cmd
}

// endedErr is the exit of a command that saw run id end with status:
// nil for completed, a failure (exit 1) for every other end.
func endedErr(id, status string) error {
	switch status {
	case runstore.StatusCompleted:
		return nil
	case runstore.StatusRunning, runstore.StatusWaiting:
		return failedErr(fmt.Errorf("run %s is %s, but Temporal no longer runs it", id, status))
	}
	return failedErr(fmt.Errorf("run %s ended %s", id, status))
}

// jsonState is st as `status --json` prints it: a path step's status is
// its outcome when the visit did not go as it should (failed, exited,
// timed_out), never "ok" beside an outcome that says otherwise.
func jsonState(st *runapi.State) *runapi.State {
	out := *st
	out.Path = make([]runstore.Step, len(st.Path))
	for i, s := range st.Path {
		if s.Outcome != "" && s.Outcome != runstore.OutcomeOK {
			s.Status = s.Outcome
		}
		out.Path[i] = s
	}
	return &out
}

// loaded is a run as loadState found it.
type loaded struct {
	st     *runapi.State
	source string
	// described is Temporal's description of the run (nil when Temporal
	// did not describe it): it holds the progress of the visits in flight.
	described *workflowservice.DescribeWorkflowExecutionResponse
	// workers is what was known of Temporal and the workers: a run no
	// worker answered says so here.
	workers health.Report
}

// open says Temporal runs the run.
func (l *loaded) open() bool {
	return statusOf(l.described) == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// unanswerable says why the run's questions cannot be answered now; ""
// when they can.
func (l *loaded) unanswerable() string {
	switch {
	case l.workers.Temporal != nil:
		return "Temporal is unreachable: no answer can be sent now"
	case !l.open():
		return "unanswered when the run ended"
	}
	return ""
}

// liveWait bounds the state query of a run a worker polled for a moment
// ago: a page that waits on it is one a person waits on.
const liveWait = 2 * time.Second

// loadState asks the live workflow first and the run store second. It
// asks the workers' health first: a run no worker polls for is read from
// the store at once, not after a query's timeout, and Temporal
// unreachable is said in a second. When neither source can answer, it
// says which failed and how; when only Temporal can, it shows what
// Temporal knows and says what is missing.
func (a *app) loadState(ctx context.Context, id string) (*loaded, error) {
	l := &loaded{workers: a.health(ctx, "")}
	var temporalStatus enumspb.WorkflowExecutionStatus
	var live string // why the live workflow did not answer
	if l.workers.Temporal != nil {
		live = l.workers.String()
	} else {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		l.described, err = a.describe(dctx, id)
		temporalStatus = statusOf(l.described)
		cancel()
		switch {
		case err != nil:
			live = "Temporal could not describe the run: " + err.Error()
		case temporalStatus == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			st, why := a.liveState(ctx, id, &l.workers)
			if st != nil {
				l.st, l.source = st, "live query"
				return l, nil
			}
			live = why
		case temporalStatus == enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED:
			live = "Temporal does not know the run"
		default:
			live = "the run is closed in Temporal"
		}
	}
	cp, err := a.latestCheckpoint(ctx, id)
	if err != nil {
		if errors.Is(err, runstore.ErrNoCheckpoint) {
			return a.withoutCheckpoint(ctx, id, temporalStatus, live, l)
		}
		storeErr := fmt.Sprintf("the run store %s failed: %s", a.cfg.BlobURL, rootCause(err))
		if temporalStatus == enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED {
			return nil, failedErr(fmt.Errorf("cannot show run %q: %s; %s. Check that the store is up and TETHER_BLOB_URL names it, then try again", id, live, storeErr))
		}
		// Temporal knows the run: its status at least.
		l.st = &runapi.State{RunID: id, Status: temporalStatusName(temporalStatus)}
		l.source = fmt.Sprintf("Temporal only (%s; %s: visits, outputs and questions are in the store)", live, storeErr)
		return l, nil
	}
	l.st = runapi.StateOf(cp)
	if temporalStatus != enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED && temporalStatus != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		if l.st.Status == runstore.StatusRunning || l.st.Status == runstore.StatusWaiting {
			l.st.Status = temporalStatusName(temporalStatus)
		}
	}
	l.source = fmt.Sprintf("run store, checkpoint %d", cp.Seq)
	if temporalStatus == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || l.workers.Temporal != nil {
		l.source += "; " + live
	}
	return l, nil
}

// liveState asks an open run for its state, as long as a worker may
// answer: not at all when none polls, a moment when the pollers cannot
// tell (the answer, or its absence, settles rep). Without a state it says
// why.
func (a *app) liveState(ctx context.Context, id string, rep *health.Report) (*runapi.State, string) {
	if rep.Workers == health.WorkersDown {
		return nil, "the run is open, but " + rep.String()
	}
	var st *runapi.State
	query := func(qctx context.Context) (err error) {
		st, err = a.queryState(qctx, id)
		return err
	}
	var err error
	if rep.Workers == health.WorkersUnsure {
		if err = rep.Probe(ctx, id, query); rep.Workers != health.WorkersUnsure {
			a.healthMu.Lock()
			a.healthLast = *rep
			a.healthMu.Unlock()
		}
	} else {
		qctx, cancel := context.WithTimeout(ctx, liveWait)
		err = query(qctx)
		cancel()
		if err != nil && (health.NoWorker(err) || qctx.Err() != nil) {
			rep.Workers, rep.Unanswered = health.WorkersDown, id
		}
	}
	switch {
	case err == nil:
		return st, ""
	case rep.Workers == health.WorkersDown:
		return nil, "the run is open, but " + rep.String()
	}
	return nil, "the run is open but its state query failed (" + rootCause(err) + ")"
}

func (a *app) latestCheckpoint(ctx context.Context, id string) (*runstore.Checkpoint, error) {
	runs, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	return runs.Latest(ctx, id)
}

func temporalStatusName(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

// rootCause is the innermost message of an error chain: for a store that
// is down, "dial tcp 127.0.0.1:9000: connect: connection refused" rather
// than the SDK's whole envelope.
func rootCause(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// printState prints a run's state; unanswerable says why its questions
// cannot be answered now ("" when they can: each gets its answer line).
func (a *app) printState(st *runapi.State, source, unanswerable string) {
	w := a.out
	fmt.Fprintf(w, "run:        %s\n", st.RunID)
	fmt.Fprintf(w, "graph:      %s\n", st.Graph)
	for _, e := range st.GraphEdits {
		fmt.Fprintf(w, "corrected:  at checkpoint %d by %s from %s: %s\n", e.Seq, e.Via, e.File, strings.Join(e.Changes, "; "))
	}
	fmt.Fprintf(w, "status:     %s\n", st.Status)
	if len(st.Current) > 0 {
		fmt.Fprintf(w, "current:    %s\n", strings.Join(st.Current, ", "))
	}
	fmt.Fprintf(w, "visits:     %d\n", st.Steps)
	fmt.Fprintf(w, "checkpoint: %d\n", st.Checkpoint)
	fmt.Fprintf(w, "source:     %s\n", source)
	if st.Error != "" {
		fmt.Fprintf(w, "error:      %s\n", st.Error)
	}
	for _, q := range st.Questions {
		if unanswerable != "" {
			// A closed run takes no answer; its resume asks again.
			fmt.Fprintf(w, "question:   [%s] %s asked: %s (%s)\n", q.ID, q.Node, q.Text, unanswerable)
			continue
		}
		fmt.Fprintf(w, "question:   [%s] %s asks: %s\n            answer with: tether answer %s %s TEXT\n", q.ID, q.Node, q.Text, st.RunID, q.ID)
	}
	if ws := st.Workspace; ws != nil && ws.Commit != "" {
		fmt.Fprintf(w, "workspace:  %s, %d files, %d bytes, %d snapshots (tether workspace %s log)\n", short(ws.Commit), ws.Files, ws.Bytes, ws.Snapshots, st.RunID)
	}
	if ws := st.Workspace; ws != nil {
		for _, n := range ws.Notes {
			fmt.Fprintf(w, "workspace:  note: %s\n", n)
		}
		for _, b := range ws.Branches {
			at := "at " + b.Next
			if b.Next == "" {
				at = "at the join " + b.Join
			}
			fmt.Fprintf(w, "workspace:  branch %-16s %s (%s; tether workspace %s diff --branch %s)\n", b.Name, at, short(b.Commit), st.RunID, b.Name)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(st.Sessions)) {
		s := st.Sessions[id]
		fmt.Fprintf(w, "session:    %s → %s %s\n", id, s.Backend, s.SessionID)
	}
	if len(st.Path) > 0 {
		fmt.Fprintln(w, "path:")
		for _, s := range st.Path {
			fmt.Fprintln(w, pathLine(st, s))
		}
	}
	for _, l := range nodeUsages(st) {
		fmt.Fprintf(w, "usage:      %s\n", l)
	}
	fmt.Fprintf(w, "web ui:     %s\n", a.cfg.RunURL(st.RunID))
}

// printRunning prints the progress of the visits in flight.
func (a *app) printRunning(running []agent.Progress) {
	for _, p := range running {
		fmt.Fprintf(a.out, "running:    %s\n", progressLine(p))
		if p.Activity != "" && p.Text != "" {
			fmt.Fprintf(a.out, "            %q\n", excerpt.Flat(p.Text))
		}
	}
}

func (a *app) answerCmd() *cobra.Command {
	var signal bool
	cmd := &cobra.Command{
		Use:   "answer RUN QUESTION_ID TEXT",
		Short: "Answer a pending question of a run",
		Long: `Answer a pending question. By default the answer goes as the workflow
update "answer", so an unknown or already-answered question is refused with
a clear message (exit 2). With --signal it is sent as the "answer" signal,
fire and forget.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, qid, text := args[0], args[1], args[2]
			c, err := a.temporal()
			if err != nil {
				return failedErr(err)
			}
			if strings.TrimSpace(text) == "" {
				if err := a.emptyAllowed(cmd.Context(), id, qid); err != nil {
					return err
				}
			}
			ans := runapi.Answer{QuestionID: qid, Text: text}
			if signal {
				if err := a.queueAnswer(cmd.Context(), id, ans, ""); err != nil {
					return err
				}
				fmt.Fprintf(a.out, "answer to %s sent to run %s\n", qid, id)
				return nil
			}
			// The answer waits for a worker: say so when none is up.
			stop := a.workers(id, "the answer").watch(cmd.Context(), a.errOut)
			defer stop()
			if err := answer(cmd.Context(), c, id, ans); err != nil {
				stop()
				return err
			}
			stop()
			fmt.Fprintf(a.out, "answer to %s accepted by run %s\n", qid, id)
			return nil
		},
	}
	cmd.Flags().BoolVar(&signal, "signal", false, "send as a signal instead of an update")
	return cmd
}

// emptyAllowed refuses an empty answer unless the question takes one
// (a human node's allow_empty), which only the live run can say.
func (a *app) emptyAllowed(ctx context.Context, id, qid string) error {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := a.queryState(qctx, id)
	if err != nil {
		return usageErr("the answer to %s is empty, and run %s could not say whether the question takes an empty answer (%s); give a non-empty answer", qid, id, rootCause(err))
	}
	for _, q := range st.Questions {
		if q.ID == qid && q.AllowEmpty {
			return nil
		}
	}
	return usageErr("the answer to %s is empty; the question needs one (its node does not set allow_empty). Give the answer as the last argument, quoted: tether answer %s %s \"…\"", qid, id, qid)
}

// queueAnswer sends ans to run id as the "answer" signal, by (the OS
// user when empty): Temporal keeps it in the run's history, and the run
// takes it when a worker does, or ignores it if the question is no
// longer pending. `tether answer --signal` and the console (when no
// worker polls) use it.
func (a *app) queueAnswer(ctx context.Context, id string, ans runapi.Answer, by string) error {
	c, done, err := a.as(by)
	if err != nil {
		return failedErr(err)
	}
	defer done()
	if err := c.SignalWorkflow(ctx, id, "", runapi.SignalAnswer, ans); err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return usageErr("run %s is not open, so it takes no answer", id)
		}
		return failedErr(fmt.Errorf("signal run %s: %w", id, err))
	}
	return nil
}

// answer sends ans to run id as the "answer" update and waits for the
// run to take it: the run's own refusal (an unknown or answered question)
// comes back as a usage error. `tether answer` and the console use it.
func answer(ctx context.Context, c client.Client, id string, ans runapi.Answer) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: runapi.UpdateAnswer, Args: []any{ans},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return usageErr("answer refused: run %s is not open (%s), so it takes no answer", id, runapi.ErrorText(err))
		}
		if ctx.Err() != nil {
			return failedErr(fmt.Errorf("run %s did not take the answer: %w", id, ctx.Err()))
		}
		return usageErr("answer refused by run %s: %s", id, runapi.ErrorText(err))
	}
	return nil
}

func (a *app) validateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a graph file and report every problem with its code and position",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			g, err := graph.ParseFile(path)
			if err != nil {
				fmt.Fprintln(a.out, err)
				return &exitError{code: ExitUsage, err: fmt.Errorf("%s is not a valid graph", path)}
			}
			probs := graph.Validate(g)
			if len(probs) > 0 {
				fmt.Fprint(a.out, probs.Format(path))
			}
			if probs.HasErrors() {
				return &exitError{code: ExitUsage, err: fmt.Errorf("%s is not a valid graph", path)}
			}
			fmt.Fprintf(a.out, "%s: ok (%d nodes, %d edges)\n", path, len(g.Nodes), len(g.Edges))
			return nil
		},
	}
}

func (a *app) graphCmd() *cobra.Command {
	var (
		format string
		run    string
	)
	cmd := &cobra.Command{
		Use:   "graph [FILE] [--run RUN]",
		Short: "Draw a graph as Mermaid or DOT, optionally with the path a run took, or print it as a graph file (yaml)",
		Long: `Draw a graph file, or with --run and no FILE the graph that run executes
(as its checkpoint holds it, which a later edit of the file does not change).
--run also highlights the nodes and edges the run took. --format yaml prints
the graph as a graph file instead, in canonical form: to save the graph of a
run before forking it with changes, or to see a file as Tether reads it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && run == "" {
				return usageErr("name a graph FILE, or a run with --run RUN to use the graph it executes")
			}
			var g *graph.Graph
			if len(args) == 1 {
				var err error
				if g, err = graph.ParseFile(args[0]); err != nil {
					return &exitError{code: ExitUsage, err: err}
				}
			}
			var taken *render.Taken
			if run != "" {
				runs, err := a.store(cmd.Context())
				if err != nil {
					return failedErr(err)
				}
				cp, err := runs.Latest(cmd.Context(), run)
				if err != nil {
					return failedErr(fmt.Errorf("run %s: %w", run, err))
				}
				taken = &render.Taken{Visits: cp.Visits, Transitions: cp.Transitions}
				if g == nil {
					if g, err = runapi.GraphOf(cp); err != nil {
						return failedErr(err)
					}
				}
			}
			if format == "yaml" {
				b, err := graph.Encode(g)
				if err != nil {
					return failedErr(err)
				}
				_, err = a.out.Write(b)
				return err
			}
			s, err := render.Draw(g, format, taken)
			if err != nil {
				return usageErr("%v or yaml", err)
			}
			fmt.Fprint(a.out, s)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "mermaid", "mermaid, dot, or yaml (the graph as a graph file)")
	cmd.Flags().StringVar(&run, "run", "", "highlight the nodes and edges this run took; without FILE, use the graph this run executes")
	return cmd
}

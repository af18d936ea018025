package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// visitActivityTypes are the activities that carry out a visit, whose
// input and result `tether logs` reads from a run's history.
var visitActivityTypes = []string{"Visit", "VisitBranch", "ExecuteNode", "RunTool"}

// visitRecord is one round of a visit as the history holds it: an agent
// or tool visit's activity, or the answer a human node took.
type visitRecord struct {
	req     visitInput
	output  map[string]any
	failure string
	pending bool
	seq     int // order in the run's histories
	// exec is the execution (0: the run's first) whose history holds it.
	exec int
	// answer is a human node's answer (nil for an activity).
	answer *humanAnswer
}

// humanAnswer is the answer a human node's visit took.
type humanAnswer struct {
	question string // its id
	text     string
	by       string
	at       time.Time
	signal   bool
}

// visitInput is what every visit activity's request has in common.
type visitInput struct {
	NodeID     string                   `json:"node_id"`
	Visit      int                      `json:"visit"`
	Node       graph.Node               `json:"node"`
	Backend    string                   `json:"backend"`
	Input      map[string]any           `json:"input"`
	PrevOutput map[string]any           `json:"prev_output"`
	Workspace  *runstore.WorkspaceState `json:"workspace"`
	Answer     *agent.Answer            `json:"answer"`
	BranchName string                   `json:"branch_name"`
	Guidance   []string                 `json:"guidance"`
}

func (a *app) logsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logs RUN [NODE [VISIT]]",
		Short: "Print what a run's visits were given and what they said: prompt, guidance, output, stdout and stderr, answers",
		Long: `Print each visit of RUN (of NODE, or only its visit VISIT): the prompt
it ran with, rendered again from the input Temporal recorded for it, the
guidance people sent it, its output, and a tool's command, exit code,
stdout and stderr (their last 4 KiB). A visit that asked a person shows
each round, with the answer it was given; a human node's visit shows its
question and the answer, who gave it and when. After a rewind, a visit
shows as the run's current line of history ran it.

It reads the run's histories in Temporal. Once Temporal's retention has
removed them, it prints what the run store kept instead: each visit's
summary on the path, and a node's latest output.`,
		Args: cobra.RangeArgs(1, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, node, visit := args[0], "", 0
			if len(args) > 1 {
				node = args[1]
			}
			if len(args) > 2 {
				n, err := strconv.Atoi(args[2])
				if err != nil || n < 1 {
					return usageErr("VISIT %q is not a visit number (1, 2, …)", args[2])
				}
				visit = n
			}
			recs, execs, err := a.visitRecords(cmd.Context(), id)
			if err != nil {
				return failedErr(err)
			}
			if execs == 0 {
				return a.logsFromStore(cmd.Context(), id, node, visit)
			}
			all := recs
			recs = slices.DeleteFunc(slices.Clone(recs), func(r visitRecord) bool {
				return (node != "" && r.req.NodeID != node) || (visit != 0 && r.req.Visit != visit)
			})
			if len(recs) == 0 {
				return usageErr("run %s has no visit %s in Temporal's history; its visits: %s", id, strings.TrimSpace(node+" "+visitText(visit)), visitList(all))
			}
			for _, r := range recs {
				printVisit(a.out, r)
			}
			return nil
		},
	}
}

// visitRecords reads the visits of every execution of run id, oldest
// first, and how many executions Temporal holds. A visit that a later
// execution ran again (after a rewind, a resume) is shown as the later
// one ran it: the earlier one was dropped.
func (a *app) visitRecords(ctx context.Context, id string) ([]visitRecord, int, error) {
	c, err := a.temporal()
	if err != nil {
		return nil, 0, err
	}
	humans := map[string]*graph.Node{}
	if g, ok, err := a.temporalGraph(ctx, id); err == nil && ok {
		for i, n := range g.Nodes {
			if n.Kind == graph.KindHuman {
				humans[n.ID] = &g.Nodes[i]
			}
		}
	}
	var execs []*commonpb.WorkflowExecution
	var page []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q", id), NextPageToken: page})
		if err != nil {
			return nil, 0, fmt.Errorf("list the executions of run %s: %w", id, err)
		}
		infos := resp.GetExecutions()
		slices.SortFunc(infos, func(x, y *workflowpb.WorkflowExecutionInfo) int {
			return x.GetStartTime().AsTime().Compare(y.GetStartTime().AsTime())
		})
		for _, e := range infos {
			execs = append(execs, e.GetExecution())
		}
		if page = resp.GetNextPageToken(); len(page) == 0 {
			break
		}
	}
	dc := converter.GetDefaultDataConverter()
	var recs []visitRecord
	for n, e := range execs {
		byID := map[int64]int{} // scheduled event id -> index in recs
		first := len(recs)
		it := c.GetWorkflowHistory(ctx, id, e.GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return nil, 0, fmt.Errorf("read the history of run %s: %w", id, err)
			}
			record(ev, dc, byID, &recs)
			recordAnswer(ev, dc, humans, &recs, first)
		}
		for i := first; i < len(recs); i++ {
			recs[i].exec = n
		}
	}
	return current(recs), len(execs), nil
}

// current keeps each visit as the latest execution that ran it: a rewind
// runs a visit again under its number, and the earlier run of it was
// dropped with the checkpoints after the rewind's.
func current(recs []visitRecord) []visitRecord {
	key := func(r visitRecord) string {
		return fmt.Sprintf("%s\x00%d\x00%s", r.req.NodeID, r.req.Visit, r.req.BranchName)
	}
	last := map[string]int{}
	for _, r := range recs {
		last[key(r)] = max(last[key(r)], r.exec)
	}
	return slices.DeleteFunc(recs, func(r visitRecord) bool { return r.exec < last[key(r)] })
}

// recordAnswer adds the answer a human node's visit took: the update the
// run accepted, or the signal it was sent (the first for each question).
// The records of this execution start at first.
func recordAnswer(ev *historypb.HistoryEvent, dc converter.DataConverter, humans map[string]*graph.Node, recs *[]visitRecord, first int) {
	var (
		a      runapi.Answer
		by     string
		signal bool
	)
	switch {
	case ev.GetWorkflowExecutionSignaledEventAttributes() != nil:
		at := ev.GetWorkflowExecutionSignaledEventAttributes()
		if at.GetSignalName() != runapi.SignalAnswer || dc.FromPayloads(at.GetInput(), &a) != nil {
			return
		}
		by, signal = at.GetIdentity(), true
	case ev.GetWorkflowExecutionUpdateAcceptedEventAttributes() != nil:
		req := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest()
		if req.GetInput().GetName() != runapi.UpdateAnswer || dc.FromPayloads(req.GetInput().GetArgs(), &a) != nil {
			return
		}
		by = req.GetMeta().GetIdentity()
	default:
		return
	}
	i := strings.LastIndexByte(a.QuestionID, '-')
	if i <= 0 {
		return
	}
	node, ok := humans[a.QuestionID[:i]]
	visit, err := strconv.Atoi(a.QuestionID[i+1:])
	if !ok || err != nil || visit < 1 {
		return // an agent's question: its next round shows the answer
	}
	for _, r := range (*recs)[first:] {
		if r.answer != nil && r.answer.question == a.QuestionID {
			return // answered already; the run ignored this one
		}
	}
	*recs = append(*recs, visitRecord{
		req:    visitInput{NodeID: node.ID, Visit: visit, Node: *node},
		answer: &humanAnswer{question: a.QuestionID, text: a.Text, by: by, at: ev.GetEventTime().AsTime(), signal: signal},
		seq:    len(*recs),
	})
}

// visitList names recs' visits, for a person who asked for another.
func visitList(recs []visitRecord) string {
	var out []string
	for _, r := range recs {
		v := fmt.Sprintf("%s %d", r.req.NodeID, r.req.Visit)
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return "none yet"
	}
	return strings.Join(out, ", ")
}

// record adds what one history event says about a visit.
func record(ev *historypb.HistoryEvent, dc converter.DataConverter, byID map[int64]int, recs *[]visitRecord) {
	switch {
	case ev.GetActivityTaskScheduledEventAttributes() != nil:
		at := ev.GetActivityTaskScheduledEventAttributes()
		if !slices.Contains(visitActivityTypes, at.GetActivityType().GetName()) {
			return
		}
		var in visitInput
		if dc.FromPayloads(at.GetInput(), &in) != nil || in.NodeID == "" {
			return
		}
		byID[ev.GetEventId()] = len(*recs)
		*recs = append(*recs, visitRecord{req: in, pending: true, seq: len(*recs)})
	case ev.GetActivityTaskCompletedEventAttributes() != nil:
		at := ev.GetActivityTaskCompletedEventAttributes()
		i, ok := byID[at.GetScheduledEventId()]
		if !ok {
			return
		}
		r := &(*recs)[i]
		r.pending = false
		var res struct {
			Output map[string]any `json:"output"`
		}
		if dc.FromPayloads(at.GetResult(), &res) == nil && res.Output != nil {
			r.output = res.Output
			return
		}
		var out map[string]any // RunTool's result is the output itself
		if dc.FromPayloads(at.GetResult(), &out) == nil {
			r.output = out
		}
	case ev.GetActivityTaskFailedEventAttributes() != nil:
		at := ev.GetActivityTaskFailedEventAttributes()
		if i, ok := byID[at.GetScheduledEventId()]; ok {
			(*recs)[i].pending = false
			(*recs)[i].failure = runapi.ErrorText(temporal.GetDefaultFailureConverter().FailureToError(at.GetFailure()))
		}
	case ev.GetActivityTaskTimedOutEventAttributes() != nil:
		at := ev.GetActivityTaskTimedOutEventAttributes()
		if i, ok := byID[at.GetScheduledEventId()]; ok {
			(*recs)[i].pending = false
			(*recs)[i].failure = runapi.ErrorText(temporal.GetDefaultFailureConverter().FailureToError(at.GetFailure()))
		}
	}
}

// printVisit prints one attempt of a visit.
func printVisit(w io.Writer, r visitRecord) {
	in := r.req
	head := fmt.Sprintf("== %s visit %d · %s", in.NodeID, in.Visit, in.Node.Kind)
	if in.Backend != "" {
		head += " · " + in.Backend
	}
	if in.BranchName != "" {
		head += " · branch " + in.BranchName
	}
	fmt.Fprintln(w, head+" ==")
	if a := r.answer; a != nil {
		q, err := graph.RenderPrompt(in.Node.Question, graph.PromptData{Visit: in.Visit})
		if err != nil || strings.Contains(in.Node.Question, ".input") {
			q = in.Node.Question + "\n(as the graph writes it; the run filled it in from the visit's input)"
		}
		section(w, "question "+a.question, q)
		how := "update"
		if a.signal {
			how = "signal"
		}
		section(w, fmt.Sprintf("answer (by %s, %s, %s)", a.by, a.at.UTC().Format(time.RFC3339), how), a.text)
		fmt.Fprintln(w)
		return
	}
	switch in.Node.Kind {
	case graph.KindTool:
		argv := make([]string, len(in.Node.Run))
		for i, arg := range in.Node.Run {
			s, err := graph.RenderPrompt(arg, graph.PromptData{Input: in.Input, Visit: in.Visit, Workspace: promptWorkspace(in.Workspace)})
			if err != nil {
				s = arg
			}
			argv[i] = s
		}
		section(w, "command", strings.Join(argv, " "))
	default:
		if in.Answer != nil {
			section(w, "answer given (the conversation goes on from its question)", in.Answer.Text)
		} else {
			p, err := graph.RenderPrompt(in.Node.Prompt, graph.PromptData{Input: in.Input, Output: in.PrevOutput, Visit: in.Visit, Workspace: promptWorkspace(in.Workspace)})
			if err != nil {
				p = fmt.Sprintf("(the prompt cannot be rendered: %v)", err)
			}
			section(w, "prompt (rendered again from the input Temporal recorded)", p)
		}
		if len(in.Guidance) > 0 {
			section(w, "guidance it got after its prompt", strings.Join(in.Guidance, "\n"))
		}
	}
	switch {
	case r.pending:
		fmt.Fprintln(w, "-- running (no result yet) --")
	case r.failure != "":
		section(w, "failed", r.failure)
	case in.Node.Kind == graph.KindTool:
		tool, err := runapi.ToolOutputOf(r.output)
		if err != nil {
			section(w, "exit", fmt.Sprintf("(the recorded result is not a tool's output as Tether writes it: %v)", err))
		} else {
			section(w, "exit", fmt.Sprintf("exit code %d, timed out: %v, %d ms", tool.ExitCode, tool.TimedOut, tool.DurationMS))
		}
		section(w, "stdout (its last 4 KiB)", tool.Stdout)
		section(w, "stderr (its last 4 KiB)", tool.Stderr)
	default:
		if t, ok := r.output["text"].(string); ok {
			section(w, "output", t)
		}
		var rest []string
		for _, k := range slices.Sorted(maps.Keys(r.output)) {
			if k != "text" && !strings.HasPrefix(k, "_") {
				rest = append(rest, fmt.Sprintf("%s: %v", k, r.output[k]))
			}
		}
		if len(rest) > 0 {
			section(w, "output fields", strings.Join(rest, "\n"))
		}
		if u, ok := outputUsage(r.output); ok {
			section(w, "usage", usageDetail(u))
		}
	}
	fmt.Fprintln(w)
}

func section(w io.Writer, title, body string) {
	fmt.Fprintf(w, "-- %s --\n%s\n", title, strings.TrimRight(body, "\n"))
}

// promptWorkspace is what a prompt saw as .workspace, but the diff, which
// no history keeps.
func promptWorkspace(st *runstore.WorkspaceState) map[string]any {
	if st == nil {
		st = &runstore.WorkspaceState{}
	}
	return map[string]any{"commit": st.Commit, "base": st.Base, "files": st.Files,
		"diff": "(the diff this visit saw is not kept; `tether workspace RUN diff` shows the run's)", "branches": ""}
}

// logsFromStore prints what the run store kept of the visits asked for,
// when Temporal no longer has the run's history.
func (a *app) logsFromStore(ctx context.Context, id, node string, visit int) error {
	runs, err := a.store(ctx)
	if err != nil {
		return failedErr(err)
	}
	cp, err := runs.Latest(ctx, id)
	if errors.Is(err, runstore.ErrNoCheckpoint) {
		return usageErr("no run %q: Temporal at %s holds no execution of it and the run store %s no checkpoint; check the id (tether list)", id, a.cfg.TemporalAddress, a.cfg.BlobURL)
	}
	if err != nil {
		return failedErr(fmt.Errorf("run %s: Temporal holds no execution of it, and the run store: %w", id, err))
	}
	fmt.Fprintf(a.out, "(Temporal has no history of run %s; from the run store, checkpoint %d: each visit's summary, and each node's latest output)\n", id, cp.Seq)
	st := runapi.StateOf(cp)
	shown := 0
	for _, s := range cp.Path {
		if (node != "" && s.Node != node) || (visit != 0 && s.Visit != visit) {
			continue
		}
		shown++
		fmt.Fprintln(a.out, pathLine(st, s))
		if cp.Visits[s.Node] == s.Visit {
			if out := cp.Outputs[s.Node]; out != nil {
				for _, k := range slices.Sorted(maps.Keys(out)) {
					if !strings.HasPrefix(k, "_") {
						fmt.Fprintf(a.out, "    %s: %v\n", k, out[k])
					}
				}
			}
		}
	}
	if shown == 0 {
		return usageErr("run %s has no visit %s", id, strings.TrimSpace(node+" "+visitText(visit)))
	}
	return nil
}

func visitText(v int) string {
	if v == 0 {
		return ""
	}
	return strconv.Itoa(v)
}

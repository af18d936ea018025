// Package runlist lists runs from Temporal's visibility, one row per run:
// a run that was resumed, rewound or continued as new has several
// executions under its id, and only its latest says where it stands. The
// console's runs page and `tether list` read it, with the same filters.
package runlist

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// Statuses are the run statuses a filter takes: Tether's own, then the
// ones only Temporal knows (a terminated run could not say so itself).
var Statuses = []string{
	runstore.StatusWaiting, runstore.StatusRunning, runstore.StatusFailedResumable,
	runstore.StatusFailed, runstore.StatusCompleted, runstore.StatusCanceled, "terminated", "timed_out",
}

// filterValue is what a filter or search may hold: it goes into a
// visibility query between quotes.
// Its length is checked apart: a counted repetition costs a
// millisecond to compile at every start of tether and the worker.
var filterValue = regexp.MustCompile(`^[A-Za-z0-9._:@/+-]+$`)

// Filter is what a list asks for; the zero Filter lists every run.
type Filter struct {
	Status, Graph, Node, Backend string
	// Q is a run id, or the start of one.
	Q string
}

// Empty says no filter is set.
func (f Filter) Empty() bool { return f == Filter{} }

// Parse reads a filter from a page's query (status, graph, node, backend,
// q) and checks it.
func Parse(q url.Values) (Filter, error) {
	f := Filter{
		Status: q.Get("status"), Graph: strings.TrimSpace(q.Get("graph")), Node: strings.TrimSpace(q.Get("node")),
		Backend: strings.TrimSpace(q.Get("backend")), Q: strings.TrimSpace(q.Get("q")),
	}
	return f, f.Check()
}

// Check refuses a status Tether does not know and a value that could
// change a visibility query's meaning (a quote, an operator, markup).
func (f Filter) Check() error {
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return fmt.Errorf("unknown status %q; choose one of %s", f.Status, strings.Join(Statuses, ", "))
	}
	for _, v := range []string{f.Graph, f.Node, f.Backend, f.Q} {
		if v != "" && (len(v) > 200 || !filterValue.MatchString(v)) {
			return fmt.Errorf("%q cannot be searched for: use letters, digits and . _ : @ / + - only", v)
		}
	}
	return nil
}

// Values is the filter as a page's query, with page when set.
func (f Filter) Values(page string) url.Values {
	q := url.Values{}
	for _, kv := range [][2]string{{"status", f.Status}, {"graph", f.Graph}, {"node", f.Node}, {"backend", f.Backend}, {"q", f.Q}, {"page", page}} {
		if kv[1] != "" {
			q.Set(kv[0], kv[1])
		}
	}
	return q
}

// Query is the Temporal list filter of f; prefix searches for ids that
// start with Q (STARTS_WITH), else for Q itself.
func (f Filter) Query(prefix bool) string {
	parts := []string{fmt.Sprintf("WorkflowType = %q", runapi.WorkflowType), `ExecutionStatus != "ContinuedAsNew"`}
	switch f.Status {
	case "":
	case runstore.StatusWaiting, runstore.StatusRunning:
		parts = append(parts, fmt.Sprintf("%s = %q", runapi.SearchStatus.GetName(), f.Status), `ExecutionStatus = "Running"`)
	case runstore.StatusCanceled:
		parts = append(parts, `ExecutionStatus = "Canceled"`)
	case "terminated":
		parts = append(parts, `ExecutionStatus = "Terminated"`)
	case "timed_out":
		parts = append(parts, `ExecutionStatus = "TimedOut"`)
	default:
		parts = append(parts, fmt.Sprintf("%s = %q", runapi.SearchStatus.GetName(), f.Status))
	}
	if f.Graph != "" {
		parts = append(parts, fmt.Sprintf("%s = %q", runapi.SearchGraph.GetName(), f.Graph))
	}
	if f.Node != "" {
		parts = append(parts, fmt.Sprintf("%s = %q", runapi.SearchNode.GetName(), f.Node))
	}
	if f.Backend != "" {
		parts = append(parts, fmt.Sprintf("%s = %q", runapi.SearchBackends.GetName(), f.Backend))
	}
	if f.Q != "" {
		if prefix {
			parts = append(parts, fmt.Sprintf("WorkflowId STARTS_WITH %q", f.Q))
		} else {
			parts = append(parts, fmt.Sprintf("WorkflowId = %q", f.Q))
		}
	}
	return strings.Join(parts, " AND ")
}

// Row is one run: what its latest execution says.
type Row struct {
	ID       string   `json:"run_id"`
	Status   string   `json:"status"`
	Graph    string   `json:"graph"`
	Node     string   `json:"node,omitempty"`
	Backends []string `json:"backends,omitempty"`
	// Started is when the run's first execution started; Closed when its
	// latest closed (zero while it is open).
	Started time.Time `json:"started"`
	Closed  time.Time `json:"closed,omitzero"`
	// Executions counts the run's executions (1 + its resumes, rewinds
	// and continues-as-new).
	Executions int `json:"executions"`
	// Execution is the latest execution's Temporal run id.
	Execution string `json:"execution"`
}

// Open says the run's latest execution runs.
func (r Row) Open() bool {
	return r.Status == runstore.StatusRunning || r.Status == runstore.StatusWaiting
}

// Page is one page of runs.
type Page struct {
	Rows []Row
	// Next is the page token of the next page; nil on the last.
	Next []byte
}

// wait bounds one visibility call: a person is waiting.
const wait = 10 * time.Second

// List reads one page (size executions, from token) of the runs matching
// f, newest first, one row per run: an execution that is not its run's
// latest is left out, so a run is listed once, on the page of its latest
// execution, and by what that execution says (a run canceled and then
// resumed to completion is not listed as canceled).
func List(ctx context.Context, c client.Client, f Filter, token []byte, size int) (*Page, error) {
	if c == nil {
		return nil, errors.New("no Temporal connection")
	}
	resp, err := list(ctx, c, f, token, size)
	if err != nil {
		return nil, err
	}
	execs := resp.GetExecutions()
	ids := make([]string, 0, len(execs))
	for _, e := range execs {
		if id := e.GetExecution().GetWorkflowId(); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	runs, err := executions(ctx, c, ids)
	if err != nil {
		return nil, err
	}
	pg := &Page{Next: resp.GetNextPageToken()}
	for _, e := range execs {
		id := e.GetExecution().GetWorkflowId()
		all := runs[id]
		if len(all) > 0 && all[0].GetExecution().GetRunId() != e.GetExecution().GetRunId() {
			continue // an earlier execution of a run listed by its latest
		}
		if slices.ContainsFunc(pg.Rows, func(r Row) bool { return r.ID == id }) {
			continue
		}
		pg.Rows = append(pg.Rows, rowOf(e, all))
	}
	return pg, nil
}

func list(ctx context.Context, c client.Client, f Filter, token []byte, size int) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	req := &workflowservice.ListWorkflowExecutionsRequest{PageSize: int32(size), NextPageToken: token, Query: f.Query(true)}
	resp, err := c.ListWorkflow(ctx, req)
	if err != nil && f.Q != "" {
		// A visibility store without STARTS_WITH finds the exact id.
		req.Query = f.Query(false)
		resp, err = c.ListWorkflow(ctx, req)
	}
	return resp, err
}

// executions lists every execution of the runs ids, each run's newest
// first.
func executions(ctx context.Context, c client.Client, ids []string) (map[string][]*workflowpb.WorkflowExecutionInfo, error) {
	out := map[string][]*workflowpb.WorkflowExecutionInfo{}
	if len(ids) == 0 {
		return out, nil
	}
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = fmt.Sprintf("%q", id)
	}
	q := fmt.Sprintf("WorkflowType = %q AND WorkflowId IN (%s)", runapi.WorkflowType, strings.Join(quoted, ", "))
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 1000, NextPageToken: token, Query: q})
		if err != nil {
			return nil, fmt.Errorf("list the executions of the runs listed: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			id := e.GetExecution().GetWorkflowId()
			out[id] = append(out[id], e)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	for _, all := range out {
		slices.SortFunc(all, newestFirst)
	}
	return out, nil
}

// newestFirst orders executions by start, the latest first; of two that
// started at once, the open one (a continue-as-new's successor) first.
func newestFirst(a, b *workflowpb.WorkflowExecutionInfo) int {
	if c := b.GetStartTime().AsTime().Compare(a.GetStartTime().AsTime()); c != 0 {
		return c
	}
	ao, bo := a.GetCloseTime() == nil, b.GetCloseTime() == nil
	switch {
	case ao && !bo:
		return -1
	case bo && !ao:
		return 1
	}
	return strings.Compare(a.GetExecution().GetRunId(), b.GetExecution().GetRunId())
}

// countCap is the most executions Count lists to count runs exactly:
// listing them costs about a millisecond each on a loaded dev server
// (1,000 took 0.75-1.1 s at load 13), where a count of executions costs
// three.
const countCap = 250

// Count is how many runs match f. Visibility counts executions, so a
// namespace of up to countCap executions of GraphRun is listed whole and
// its runs counted by their latest executions (exact); beyond that the
// executions that match are counted (about: a resumed run counts once per
// execution).
func Count(ctx context.Context, c client.Client, f Filter) (n int64, exact bool, err error) {
	if c == nil {
		return 0, false, errors.New("no Temporal connection")
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	all := Filter{}.Query(true)
	total, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: all})
	if err != nil {
		return 0, false, err
	}
	if total.GetCount() > countCap {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: f.Query(true)})
		if err != nil && f.Q != "" {
			resp, err = c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: f.Query(false)})
		}
		return resp.GetCount(), false, err
	}
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: int32(total.GetCount()) + 1, Query: all})
	if err != nil {
		return 0, false, err
	}
	latest := map[string]*workflowpb.WorkflowExecutionInfo{}
	for _, e := range resp.GetExecutions() {
		id := e.GetExecution().GetWorkflowId()
		if l, ok := latest[id]; !ok || newestFirst(e, l) < 0 {
			latest[id] = e
		}
	}
	for _, e := range latest {
		if f.Matches(rowOf(e, nil)) {
			n++
		}
	}
	return n, true, nil
}

// Matches says row matches f as the visibility query would.
func (f Filter) Matches(row Row) bool {
	switch {
	case f.Status != "" && row.Status != f.Status:
		return false
	case f.Graph != "" && row.Graph != f.Graph:
		return false
	case f.Node != "" && row.Node != f.Node:
		return false
	case f.Backend != "" && !slices.Contains(row.Backends, f.Backend):
		return false
	case f.Q != "" && !strings.HasPrefix(row.ID, f.Q):
		return false
	}
	return true
}

// rowOf is what visibility says of a run whose latest execution is e;
// all are its executions, newest first, when known.
func rowOf(e *workflowpb.WorkflowExecutionInfo, all []*workflowpb.WorkflowExecutionInfo) Row {
	row := Row{ID: e.GetExecution().GetWorkflowId(), Execution: e.GetExecution().GetRunId(), Started: e.GetStartTime().AsTime(), Executions: max(1, len(all))}
	if len(all) > 0 {
		row.Started = all[len(all)-1].GetStartTime().AsTime()
	}
	sa := e.GetSearchAttributes().GetIndexedFields()
	row.Status = keyword(sa, runapi.SearchStatus.GetName())
	row.Graph = keyword(sa, runapi.SearchGraph.GetName())
	row.Node = keyword(sa, runapi.SearchNode.GetName())
	row.Backends = keywords(sa, runapi.SearchBackends.GetName())
	if e.GetCloseTime() != nil {
		row.Closed = e.GetCloseTime().AsTime()
	}
	ts := TemporalStatus(e.GetStatus())
	switch {
	case row.Status == "":
		row.Status = ts
	case ts != "running" && (row.Status == runstore.StatusRunning || row.Status == runstore.StatusWaiting):
		// The run closed without saying so (terminated, timed out).
		row.Status = ts
	}
	return row
}

// TemporalStatus is Temporal's name of an execution status, as the
// temporal CLI prints it, in lower case: running, completed, canceled, ….
func TemporalStatus(st enumspb.WorkflowExecutionStatus) string {
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED:
		return ""
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed_out"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "continued_as_new"
	}
	return strings.ToLower(strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

func keyword(sa map[string]*commonpb.Payload, name string) string {
	p, ok := sa[name]
	if !ok {
		return ""
	}
	var v string
	if converter.GetDefaultDataConverter().FromPayload(p, &v) != nil {
		var list []string
		if converter.GetDefaultDataConverter().FromPayload(p, &list) == nil && len(list) > 0 {
			return list[0]
		}
	}
	return v
}

func keywords(sa map[string]*commonpb.Payload, name string) []string {
	p, ok := sa[name]
	if !ok {
		return nil
	}
	var list []string
	if converter.GetDefaultDataConverter().FromPayload(p, &list) != nil {
		var v string
		if converter.GetDefaultDataConverter().FromPayload(p, &v) == nil && v != "" {
			return []string{v}
		}
	}
	return list
}

// Run is one run's row, from all its executions: its latest, when its
// first started, how many it had. ok is false when Temporal lists none.
func Run(ctx context.Context, c client.Client, id string) (row Row, ok bool, err error) {
	if c == nil {
		return Row{}, false, errors.New("no Temporal connection")
	}
	runs, err := executions(ctx, c, []string{id})
	if err != nil || len(runs[id]) == 0 {
		return Row{}, false, err
	}
	return rowOf(runs[id][0], runs[id]), true, nil
}

package console

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"golang.org/x/sync/errgroup"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// runsPerPage is how many runs one page of the list shows.
const runsPerPage = 50

// statuses are the run statuses a person can filter by: Tether's own, then
// the ones only Temporal knows (a run that was canceled or terminated
// could not say so itself).
var statuses = []string{
	runstore.StatusWaiting, runstore.StatusRunning, runstore.StatusFailedResumable,
	runstore.StatusFailed, runstore.StatusCompleted, "canceled", "terminated", "timed_out",
}

// filterValue is what a filter or search may hold: it goes into a
// visibility query between quotes.
var filterValue = regexp.MustCompile(`^[A-Za-z0-9._:@/+-]{1,200}$`)

// runFilter is the runs page's filters and search.
type runFilter struct {
	Status, Graph, Node, Backend, Q string
}

// Empty says no filter is set.
func (f runFilter) Empty() bool { return f == runFilter{} }

// url is the runs page with the filter, and page token when set.
func (f runFilter) url(page string) string {
	q := url.Values{}
	for _, kv := range [][2]string{{"status", f.Status}, {"graph", f.Graph}, {"node", f.Node}, {"backend", f.Backend}, {"q", f.Q}, {"page", page}} {
		if kv[1] != "" {
			q.Set(kv[0], kv[1])
		}
	}
	if len(q) == 0 {
		return "/runs"
	}
	return "/runs?" + q.Encode()
}

func filterOf(r *http.Request) (runFilter, error) {
	q := r.URL.Query()
	f := runFilter{
		Status: q.Get("status"), Graph: strings.TrimSpace(q.Get("graph")), Node: strings.TrimSpace(q.Get("node")),
		Backend: strings.TrimSpace(q.Get("backend")), Q: strings.TrimSpace(q.Get("q")),
	}
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		return f, fmt.Errorf("unknown status %q; choose one of %s", f.Status, strings.Join(statuses, ", "))
	}
	for _, v := range []string{f.Graph, f.Node, f.Backend, f.Q} {
		if v != "" && !filterValue.MatchString(v) {
			return f, fmt.Errorf("%q cannot be searched for: use letters, digits and . _ : @ / + - only", v)
		}
	}
	return f, nil
}

// visibilityQuery is the Temporal list filter of f. Each run is listed
// once: executions that continued as new are left out.
func (f runFilter) visibilityQuery(prefix bool) string {
	parts := []string{fmt.Sprintf("WorkflowType = %q", runapi.WorkflowType), `ExecutionStatus != "ContinuedAsNew"`}
	switch f.Status {
	case "":
	case runstore.StatusWaiting, runstore.StatusRunning:
		parts = append(parts, fmt.Sprintf("%s = %q", runapi.SearchStatus.GetName(), f.Status), `ExecutionStatus = "Running"`)
	case "canceled":
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

// runRow is one run in the list.
type runRow struct {
	ID       string
	Status   string
	Graph    string
	Node     string
	Backends []string
	// Visits, Usage and Changed come from the run's latest checkpoint;
	// Known says it could be read.
	Visits  int
	Usage   agent.Usage
	Known   bool
	Started time.Time
	Changed time.Time
	// Questions counts a waiting run's pending questions.
	Questions int
}

type runsView struct {
	Filter   runFilter
	Statuses []string
	Total    int64
	Rows     []runRow
	// Waiting are the runs waiting for a person, shown above the list on
	// its first page.
	Waiting []runRow
	// NextURL is the next page ("" on the last), FirstURL the first
	// (set on later pages).
	NextURL  string
	FirstURL string
	Paged    bool
	Err      string
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.listRuns(r.Context(), r)
	if err != nil {
		v.Err = err.Error()
	}
	s.render(w, r, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", Live: "/runs/events", Data: v})
}

// listRuns reads one page of runs from visibility, and the waiting ones.
func (s *Server) listRuns(ctx context.Context, r *http.Request) (runsView, error) {
	v := runsView{Statuses: statuses}
	f, err := filterOf(r)
	v.Filter = f
	if err != nil {
		return v, err
	}
	var token []byte
	if t := r.URL.Query().Get("page"); t != "" {
		if token, err = base64.RawURLEncoding.DecodeString(t); err != nil {
			return v, fmt.Errorf("the page link is damaged; start again from the first page")
		}
		v.Paged, v.FirstURL = true, f.url("")
	}
	g, gctx := errgroup.WithContext(ctx)
	var rows []runRow
	g.Go(func() error {
		var next []byte
		var err error
		rows, next, err = s.visibility(gctx, f, token)
		if len(next) > 0 {
			v.NextURL = f.url(base64.RawURLEncoding.EncodeToString(next))
		}
		return err
	})
	g.Go(func() error {
		n, err := s.count(gctx, f)
		v.Total = n
		return err
	})
	if !v.Paged && (f.Status == "" || f.Status == runstore.StatusWaiting) && f.Q == "" {
		g.Go(func() error {
			wf := f
			wf.Status = runstore.StatusWaiting
			waiting, _, err := s.visibility(gctx, wf, nil)
			v.Waiting = waiting
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return v, fmt.Errorf("listing the runs from Temporal's visibility: %w", err)
	}
	v.Rows = rows
	s.fillRows(ctx, v.Rows)
	s.fillRows(ctx, v.Waiting)
	s.fillQuestions(ctx, v.Waiting)
	// A waiting run in the list shows its count too.
	for i := range v.Rows {
		for _, wr := range v.Waiting {
			if wr.ID == v.Rows[i].ID {
				v.Rows[i].Questions = wr.Questions
				v.Rows[i].Visits, v.Rows[i].Usage, v.Rows[i].Known = wr.Visits, wr.Usage, wr.Known
			}
		}
	}
	return v, nil
}

// visibility lists one page of runs matching f.
func (s *Server) visibility(ctx context.Context, f runFilter, token []byte) ([]runRow, []byte, error) {
	if s.opts.Temporal == nil {
		return nil, nil, errors.New("no Temporal connection")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req := &workflowservice.ListWorkflowExecutionsRequest{PageSize: runsPerPage, NextPageToken: token, Query: f.visibilityQuery(true)}
	resp, err := s.opts.Temporal.ListWorkflow(ctx, req)
	if err != nil && f.Q != "" {
		// A visibility store without STARTS_WITH finds the exact id.
		req.Query = f.visibilityQuery(false)
		resp, err = s.opts.Temporal.ListWorkflow(ctx, req)
	}
	if err != nil {
		return nil, nil, err
	}
	rows := make([]runRow, 0, len(resp.GetExecutions()))
	for _, e := range resp.GetExecutions() {
		rows = append(rows, rowOf(e))
	}
	return rows, resp.GetNextPageToken(), nil
}

func (s *Server) count(ctx context.Context, f runFilter) (int64, error) {
	if s.opts.Temporal == nil {
		return 0, errors.New("no Temporal connection")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := s.opts.Temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: f.visibilityQuery(true)})
	if err != nil && f.Q != "" {
		resp, err = s.opts.Temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: f.visibilityQuery(false)})
	}
	return resp.GetCount(), err
}

// rowOf is what visibility says of one run.
func rowOf(e *workflowpb.WorkflowExecutionInfo) runRow {
	row := runRow{ID: e.GetExecution().GetWorkflowId(), Started: e.GetStartTime().AsTime()}
	sa := e.GetSearchAttributes().GetIndexedFields()
	row.Status = keyword(sa, runapi.SearchStatus.GetName())
	row.Graph = keyword(sa, runapi.SearchGraph.GetName())
	row.Node = keyword(sa, runapi.SearchNode.GetName())
	row.Backends = keywords(sa, runapi.SearchBackends.GetName())
	if e.GetCloseTime() != nil {
		row.Changed = e.GetCloseTime().AsTime()
	}
	ts := temporalStatus(e.GetStatus())
	switch {
	case row.Status == "":
		row.Status = ts
	case ts != "running" && (row.Status == runstore.StatusRunning || row.Status == runstore.StatusWaiting):
		// The run closed without saying so (canceled, terminated).
		row.Status = ts
	}
	return row
}

// temporalStatus is Temporal's name of an execution status, as the
// temporal CLI prints it, in lower case: running, completed, canceled, ….
func temporalStatus(st enumspb.WorkflowExecutionStatus) string {
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

// summary is what a list needs of a run's latest checkpoint.
type summary struct {
	visits  int
	usage   agent.Usage
	changed time.Time
	pending int
	at      time.Time
}

// summaries remembers what the latest checkpoints of listed runs said:
// a closed run's never changes, an open one's is read again after
// openSummaryTTL.
type summaries struct {
	mu sync.Mutex
	m  map[string]summary
}

const (
	openSummaryTTL = 2 * time.Second
	maxSummaries   = 10000
)

var runSummaries = &summaries{m: map[string]summary{}}

func (c *summaries) get(key string, open bool) (summary, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	if ok && open && time.Since(v.at) > openSummaryTTL {
		return v, false
	}
	return v, ok
}

func (c *summaries) put(key string, v summary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxSummaries {
		clear(c.m)
	}
	v.at = time.Now()
	c.m[key] = v
}

// fillRows reads each listed run's visits, usage and last change from its
// latest checkpoint, a few at a time. A run whose checkpoint cannot be
// read keeps what visibility said.
func (s *Server) fillRows(ctx context.Context, rows []runRow) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range rows {
		row := &rows[i]
		open := row.Status == runstore.StatusRunning || row.Status == runstore.StatusWaiting
		key := row.ID + "\x00" + row.Status + "\x00" + row.Changed.String()
		if sum, ok := runSummaries.get(key, open); ok {
			row.apply(sum)
			continue
		}
		g.Go(func() error {
			cctx, cancel := context.WithTimeout(gctx, 5*time.Second)
			defer cancel()
			sum, err := s.summarize(cctx, row.ID)
			if err != nil {
				return nil
			}
			runSummaries.put(key, sum)
			row.apply(sum)
			return nil
		})
	}
	_ = g.Wait()
}

func (row *runRow) apply(sum summary) {
	row.Visits, row.Usage, row.Known = sum.visits, sum.usage, true
	if row.Changed.IsZero() || sum.changed.After(row.Changed) {
		row.Changed = sum.changed
	}
	if row.Questions == 0 {
		row.Questions = sum.pending
	}
}

func (s *Server) summarize(ctx context.Context, run string) (summary, error) {
	infos, err := s.opts.Runs.List(ctx, run)
	if err != nil || len(infos) == 0 {
		return summary{}, errors.Join(err, runstore.ErrNoCheckpoint)
	}
	last := infos[len(infos)-1]
	cp, err := s.opts.Runs.Peek(ctx, run, last.Seq)
	if err != nil {
		return summary{}, err
	}
	sum := summary{visits: cp.PathTotal, usage: totalUsage(cp), changed: last.ModTime}
	if cp.Pause != nil {
		for _, q := range cp.Pause.Questions {
			if !q.Answered {
				sum.pending++
			}
		}
	}
	return sum, nil
}

// totalUsage sums what every node of a checkpoint spent.
func totalUsage(cp *runstore.Checkpoint) agent.Usage {
	var u agent.Usage
	for _, n := range slices.Sorted(maps.Keys(cp.Usage)) {
		u = u.Add(cp.Usage[n])
	}
	return u
}

// fillQuestions asks each waiting run for its pending questions (the live
// query knows a fan-out branch's too), falling back on its checkpoint.
func (s *Server) fillQuestions(ctx context.Context, rows []runRow) {
	var wg sync.WaitGroup
	for i := range rows {
		wg.Add(1)
		go func(row *runRow) {
			defer wg.Done()
			qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if st, err := s.queryState(qctx, row.ID); err == nil {
				row.Questions = len(st.Questions)
				row.Visits, row.Usage, row.Known = st.Steps, st.TotalUsage, true
			}
			// Else the checkpoint's pause (fillRows) counted them.
		}(&rows[i])
	}
	wg.Wait()
}

// queryState asks a live run for its state.
func (s *Server) queryState(ctx context.Context, run string) (*runapi.State, error) {
	v, err := s.opts.Temporal.QueryWorkflow(ctx, run, "", runapi.QueryState)
	if err != nil {
		return nil, err
	}
	var st runapi.State
	if err := v.Get(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blobref"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/health"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// stepsPerPage is how many visits one page of a run's timeline shows.
const stepsPerPage = 50

// checkpointsPerPage is how many checkpoints the run page lists at once.
const checkpointsPerPage = 12

type runView struct {
	ID       string
	State    *runapi.State
	Source   string
	Temporal string
	// Status is the run's status as a person reads it: Tether's, unless
	// Temporal closed the run without Tether saying so (canceled).
	Status  string
	Open    bool
	Graph   *graph.Graph
	SVG     *svgGraph
	Running []progressView
	// Questions are the pending ones; Answered the ones this execution
	// was given (from Temporal's history).
	Questions []runapi.PendingQuestion
	Answered  []answered
	Timeline  timelineView
	Budgets   []budgetView
	Total     agent.Usage
	Nodes     []nodeUsage
	CPs       checkpointsView
	Joins     []joinLink
	Branches  []runapi.BranchView
	Guidance  []runstore.Guidance
	Agents    []string
	Lineage   *runstore.Lineage
	WebUI     string
	Note      string
	// Inputs are the run's inputs, as its latest checkpoint holds them.
	Inputs []field
	// Started is when the run's first execution started, Closed when its
	// latest closed (zero while open); Took is how long it ran (so far).
	Started    time.Time
	Closed     time.Time
	Took       time.Duration
	Executions int
	// Down is what keeps the run from moving (no worker polls, or none
	// answered it), for the page's status; "" when nothing is known down.
	Down string
	// Queued are the questions an answer is queued for (the answer
	// signal, in the run's history, that no worker has taken yet).
	Queued map[string]*answered
	// Edits are the corrected graphs the run continued with.
	Edits []runstore.GraphEdit
}

type progressView struct {
	Line string
	Text string
	URL  string
}

type budgetView struct {
	What      string
	Tokens    int64
	MaxTokens int64
	Cost      float64
	MaxCost   float64
	CostKnown bool
}

type nodeUsage struct {
	Node   string
	Visits int
	Usage  agent.Usage
}

type joinLink struct {
	Node  string
	Visit int
	URL   string
}

type stepView struct {
	N int
	runstore.Step
	Backend  string
	Started  time.Time
	Duration time.Duration
	URL      string
	JoinURL  string
	// Result is the outcome as a person reads it: "ok", "exit 1", "timed
	// out", "failed".
	Result string
}

// resultOf is a step's outcome in words; steps recorded before outcomes
// were kept have only their status.
func resultOf(st runstore.Step) string {
	switch st.Outcome {
	case runstore.OutcomeExited:
		return fmt.Sprintf("exit %d", st.ExitCode)
	case runstore.OutcomeTimedOut:
		return "timed out"
	case runstore.OutcomeBudget:
		return "stopped by its budget"
	case "":
		return st.Status
	}
	return st.Outcome
}

type timelineView struct {
	Steps      []stepView
	Page       int
	Pages      int
	Total      int
	Err        string
	PrevURL    string
	NextURL    string
	FirstShown int
	LastShown  int
}

type checkpointRow struct {
	Seq     int64
	At      time.Time
	Status  string
	Next    string
	Visits  int
	Rewind  string
	ForkURL string
}

type checkpointsView struct {
	Rows    []checkpointRow
	Total   int
	Page    int
	Pages   int
	PrevURL string
	NextURL string
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) error {
	run := r.PathValue("run")
	if err := runstore.ValidateRunID(run); err != nil {
		return notFound("No such run", err)
	}
	ctx := r.Context()
	rep := s.opts.Actions.Health(ctx, "")
	if rep.Temporal != nil {
		// What the run store holds may be behind the run: no page, and
		// no form, is built from it alone.
		return temporalDown(rep)
	}
	v, err := s.loadRun(ctx, run, r.URL.Query(), rep)
	if err != nil {
		return notFound("Run "+run, err)
	}
	pg := page{Title: "Run " + run, Nav: "runs", Data: v}
	if v.Open {
		pg.Live = "/runs/" + url.PathEscape(run) + "/events"
	}
	return s.render(w, r, http.StatusOK, "run", pg)
}

// loadRun gathers a run: its state (live or stored), its latest
// checkpoint (graph, path taken, budgets), the page of its timeline asked
// for, its checkpoints, and its answered questions; rep is what was down
// before the run was read.
func (s *Server) loadRun(ctx context.Context, run string, q url.Values, rep health.Report) (*runView, error) {
	ctx = withListing(ctx, run)
	rs, err := s.opts.Actions.State(ctx, run)
	if err != nil {
		return nil, err
	}
	st := rs.State
	v := &runView{ID: run, State: st, Source: rs.Source, Temporal: rs.Temporal, Status: st.Status, Started: rs.Started, Closed: rs.Closed, Executions: rs.Executions}
	v.Open = rs.Temporal == "running"
	if !v.Open && rs.Temporal != "" && (st.Status == runstore.StatusRunning || st.Status == runstore.StatusWaiting) {
		v.Status = rs.Temporal
	}
	if v.Open {
		// The run's own look (its query unanswered), else the queue's.
		if v.Down = rs.Workers.String(); v.Down == "" {
			v.Down = rep.String()
		}
	}
	switch {
	case v.Started.IsZero():
	case !v.Closed.IsZero():
		v.Took = v.Closed.Sub(v.Started)
	case v.Open:
		v.Took = time.Since(v.Started)
	}
	if s.opts.WebUI != nil {
		v.WebUI = s.opts.WebUI(run)
	}
	for _, p := range rs.Running {
		v.Running = append(v.Running, progressOf(run, p))
	}
	v.Questions = st.Questions
	v.Guidance = st.Guidance
	if st.Workspace != nil {
		v.Branches = st.Workspace.Branches
	}
	all, err := s.seqs(ctx, run)
	if err != nil {
		v.Note = fmt.Sprintf("The run store could not list the run's checkpoints: %v", blobref.Hide(err.Error()))
	}
	var cp *runstore.Checkpoint
	if len(all) > 0 {
		if cp, err = s.checkpoint(ctx, run, all[len(all)-1]); err != nil {
			v.Note = fmt.Sprintf("The run's latest checkpoint could not be read: %v", blobref.Hide(err.Error()))
		}
	}
	var tk taken
	if cp != nil {
		v.Graph = runapi.GraphOrEmpty(cp)
		v.Lineage = cp.Lineage
		v.Edits = cp.GraphEdits
		v.Budgets = budgets(cp, st)
		v.Joins = joinsOf(run, cp)
		v.Inputs = fieldsOf(cp.Inputs)
		tk = taken{visits: cp.Visits, transitions: cp.Transitions}
	} else if g, err := s.opts.Actions.Graph(ctx, run); err == nil {
		// A run before its first checkpoint: the graph it was started with.
		v.Graph = g
	}
	if v.Graph != nil {
		tk.visits = mergeVisits(tk.visits, st.Visits)
		if v.Open {
			tk.current = st.Current
		}
		tk.link = func(node string, visit int) string { return visitURL(run, node, visit) }
		g := layout(v.Graph, tk)
		v.SVG = &g
		for _, n := range v.Graph.Nodes {
			if n.Kind == graph.KindAgent {
				v.Agents = append(v.Agents, n.ID)
			}
		}
	}
	v.Total = st.TotalUsage
	for _, n := range sortedNodes(st.Usage) {
		v.Nodes = append(v.Nodes, nodeUsage{Node: n, Visits: st.Visits[n], Usage: st.Usage[n]})
	}
	v.Timeline = s.timeline(ctx, run, st, v.Graph, atoiDefault(q.Get("page"), 1))
	var drop *runstore.Drop
	if cp != nil && cp.Lineage != nil && cp.Lineage.Kind == "rewind" && cp.Lineage.At > 0 {
		drop = &runstore.Drop{To: cp.Lineage.Seq, At: cp.Lineage.At}
	}
	v.CPs = s.checkpoints(ctx, run, all, atoiDefault(q.Get("cps"), 1), v.Open, drop)
	if hasQuestions(v.Graph) {
		v.Answered = s.answers(ctx, run, rs.History)
	}
	if v.Open && v.Down != "" {
		// An answer sent while no worker polls waits in the history.
		v.Queued = map[string]*answered{}
		for i, a := range v.Answered {
			if a.Signal && slices.ContainsFunc(v.Questions, func(q runapi.PendingQuestion) bool { return q.ID == a.Question }) {
				if _, ok := v.Queued[a.Question]; !ok {
					v.Answered[i].Queued = true
					v.Queued[a.Question] = &v.Answered[i]
				}
			}
		}
	}
	return v, nil
}

// fieldsOf is a map of values (a run's inputs, a visit's output) as a
// page lists them: by key, each as text (JSON for what is not a string).
func fieldsOf(m map[string]any) []field {
	var out []field
	for _, k := range sortedNodes(m) {
		if strings.HasPrefix(k, "_") {
			continue // Tether's own stamps (fingerprints, refs): not for people
		}
		var s string
		switch x := m[k].(type) {
		case string:
			s = x
		default:
			b, err := json.MarshalIndent(x, "", "  ")
			if err != nil {
				continue
			}
			s = string(b)
		}
		out = append(out, field{Key: k, Value: s, Long: len(s) > 120 || strings.Contains(s, "\n")})
	}
	return out
}

// graphPage is a run's graph alone, at its own size: for a graph too big
// to read beside the rest of the run page.
func (s *Server) graphPage(w http.ResponseWriter, r *http.Request) error {
	run := r.PathValue("run")
	if err := runstore.ValidateRunID(run); err != nil {
		return notFound("No such run", err)
	}
	ctx := withListing(r.Context(), run)
	all, err := s.seqs(ctx, run)
	if err != nil {
		return storeFailed("Graph of run "+run, err)
	}
	var (
		g  *graph.Graph
		tk taken
	)
	if len(all) > 0 {
		cp, err := s.checkpoint(ctx, run, all[len(all)-1])
		if err != nil {
			return storeFailed("Graph of run "+run, err)
		}
		if g, err = runapi.GraphOf(cp); err != nil {
			return storeFailed("Graph of run "+run, err)
		}
		tk = taken{visits: cp.Visits, transitions: cp.Transitions}
	} else if g, err = s.opts.Actions.Graph(ctx, run); err != nil {
		return notFound("Graph of run "+run, err)
	}
	tk.link = func(node string, visit int) string { return visitURL(run, node, visit) }
	svg := layout(g, tk)
	v := graphView{Run: run, Name: g.Name, SVG: &svg, RunURL: runLink(run)}
	return s.render(w, r, http.StatusOK, "graph", page{Title: "Graph of run " + run, Nav: "runs", Data: v})
}

// graphView is the graph page.
type graphView struct {
	Run    string
	Name   string
	SVG    *svgGraph
	RunURL string
}

// mergeVisits is the visit counts of the live state where it has them.
func mergeVisits(stored, live map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range stored {
		out[k] = n
	}
	for k, n := range live {
		out[k] = max(out[k], n)
	}
	return out
}

func progressOf(run string, p agent.Progress) progressView {
	pv := progressView{Line: fmt.Sprintf("%s visit %d", p.Node, p.Visit), URL: visitURL(run, p.Node, p.Visit)}
	switch {
	case p.Activity != "":
		pv.Line += " · " + p.Activity
	case p.Text != "":
		pv.Line += " · writing"
	default:
		pv.Line += " · thinking"
	}
	if n := p.Usage.Tokens(); n > 0 {
		pv.Line += " · " + tokens(n) + " tokens"
	}
	if p.Elapsed > 0 {
		pv.Line += " · " + dur(p.Elapsed.Round(time.Second))
	}
	pv.Text = p.Text
	return pv
}

func visitURL(run, node string, visit int) string {
	return fmt.Sprintf("/runs/%s/visits/%s/%d", url.PathEscape(run), url.PathEscape(node), visit)
}

func joinURL(run, node string, visit int) string {
	return fmt.Sprintf("/runs/%s/joins/%s/%d", url.PathEscape(run), url.PathEscape(node), visit)
}

// budgets are the run's and each node's budget beside what they spent.
func budgets(cp *runstore.Checkpoint, st *runapi.State) []budgetView {
	var out []budgetView
	add := func(what string, b *graph.Budget, u agent.Usage) {
		if b == nil || (b.MaxTokens == 0 && b.MaxCostUSD == 0) {
			return
		}
		out = append(out, budgetView{What: what, Tokens: u.Tokens(), MaxTokens: b.MaxTokens, Cost: u.CostUSD, MaxCost: b.MaxCostUSD, CostKnown: u.CostKnown})
	}
	g := runapi.GraphOrEmpty(cp)
	add("the run", g.Budget, st.TotalUsage)
	for _, n := range g.Nodes {
		add("node "+n.ID, n.Budget, st.Usage[n.ID])
	}
	return out
}

// joinsOf links the joins of the run's latest fan-outs to their attempts
// pages.
func joinsOf(run string, cp *runstore.Checkpoint) []joinLink {
	var out []joinLink
	for _, b := range cp.Joined {
		l := joinLink{Node: b.Join, Visit: b.JoinVisit, URL: joinURL(run, b.Join, b.JoinVisit)}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	slices.Reverse(out)
	return out
}

func hasQuestions(g *graph.Graph) bool {
	if g == nil {
		return false
	}
	for _, n := range g.Nodes {
		if n.Kind == graph.KindHuman || n.Kind == graph.KindAgent || n.Kind == graph.KindReview {
			return true
		}
	}
	return false
}

// timeline is one page of the run's visits, newest first.
func (s *Server) timeline(ctx context.Context, run string, st *runapi.State, g *graph.Graph, pageNo int) timelineView {
	total := st.Steps
	if total < len(st.Path) {
		total = len(st.Path)
	}
	tv := timelineView{Total: total}
	tv.Page, tv.Pages = pageOf(pageNo, total, stepsPerPage)
	if total == 0 {
		return tv
	}
	hi := total - (tv.Page-1)*stepsPerPage
	lo := max(1, hi-stepsPerPage+1)
	steps, err := s.stepsBetween(ctx, run, st.Path, total, lo, hi)
	if err != nil {
		tv.Err = err.Error()
	}
	first := hi - len(steps) + 1
	for i := len(steps) - 1; i >= 0; i-- {
		sv := stepView{N: first + i, Step: steps[i]}
		if t, err := time.Parse(time.RFC3339Nano, sv.StartedAt); err == nil {
			sv.Started = t
		}
		sv.Duration = time.Duration(sv.DurationMS) * time.Millisecond
		sv.Result = resultOf(sv.Step)
		if g != nil {
			if n, ok := g.Node(sv.Node); ok {
				sv.Backend = n.Backend
				if n.Kind == graph.KindTool {
					sv.Backend = "tool"
				}
				if n.Kind == graph.KindJoin {
					sv.JoinURL = joinURL(run, sv.Node, sv.Visit)
				}
				if n.Kind != graph.KindEnd {
					sv.URL = visitURL(run, sv.Node, sv.Visit)
				}
			}
		}
		tv.Steps = append(tv.Steps, sv)
	}
	tv.FirstShown, tv.LastShown = lo, hi
	tv.PrevURL, tv.NextURL = pageLinks(run, "page", "timeline", tv.Page, tv.Pages)
	return tv
}

// checkpoints is one page of the run's checkpoints, newest first, each
// with what it recorded and the actions it allows.
// drop is what the run's latest rewind dropped (nil: none): those
// checkpoints are shown as dropped, without actions.
func (s *Server) checkpoints(ctx context.Context, run string, all []int64, pageNo int, open bool, drop *runstore.Drop) checkpointsView {
	cv := checkpointsView{Total: len(all)}
	cv.Page, cv.Pages = pageOf(pageNo, len(all), checkpointsPerPage)
	hi := len(all) - (cv.Page-1)*checkpointsPerPage
	lo := max(0, hi-checkpointsPerPage)
	infos, _ := s.opts.Runs.List(ctx, run)
	for i := hi - 1; i >= lo; i-- {
		row := checkpointRow{Seq: all[i]}
		if i < len(infos) && infos[i].Seq == all[i] {
			row.At = infos[i].ModTime
		}
		if cp, err := s.peek(ctx, run, all[i]); err == nil {
			row.Status, row.Visits = cp.Status, cp.PathTotal
			for _, c := range cp.Cursor {
				if row.Next != "" {
					row.Next += ", "
				}
				row.Next += c.Node
			}
		} else {
			row.Status = "unreadable: " + err.Error()
		}
		if drop != nil && drop.Covers(row.Seq) {
			row.Status = "dropped"
			row.Next = fmt.Sprintf("by the rewind to %d", drop.To)
			cv.Rows = append(cv.Rows, row)
			continue
		}
		base := "/runs/" + url.PathEscape(run) + "/act/"
		if !open {
			row.Rewind = fmt.Sprintf("%srewind?seq=%d", base, row.Seq)
		}
		row.ForkURL = fmt.Sprintf("%sfork?seq=%d", base, row.Seq)
		if row.Status == runstore.StatusCompleted || len(row.Next) == 0 {
			row.Rewind = "" // nothing would run from there
		}
		cv.Rows = append(cv.Rows, row)
	}
	cv.PrevURL, cv.NextURL = pageLinks(run, "cps", "checkpoints", cv.Page, cv.Pages)
	return cv
}

// pageOf is which page of total items, per a page, page n shows (the
// first when n is none of them), and how many pages there are.
func pageOf(n, total, per int) (page, pages int) {
	pages = max(1, (total+per-1)/per)
	if n < 1 || n > pages {
		n = 1
	}
	return n, pages
}

// pageLinks link run's page to the pages of one of its lists before and
// after page: the list's page number in query parameter param, and the
// list's anchor.
func pageLinks(run, param, anchor string, page, pages int) (prev, next string) {
	base := "/runs/" + url.PathEscape(run)
	if page > 1 {
		prev = fmt.Sprintf("%s?%s=%d#%s", base, param, page-1, anchor)
	}
	if page < pages {
		next = fmt.Sprintf("%s?%s=%d#%s", base, param, page+1, anchor)
	}
	return prev, next
}

func atoiDefault(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

func sortedNodes[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

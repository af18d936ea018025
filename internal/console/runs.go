package console

import (
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/health"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runlist"
	"github.com/tether-run/tether/internal/runstore"
)

// runsPerPage is how many executions one page of the list reads: at most
// this many runs (a run listed by its latest execution leaves its earlier
// ones out).
const runsPerPage = 50

// runsURL is the runs page with f, and page token when set.
func runsURL(f runlist.Filter, page string) string {
	q := f.Values(page)
	if len(q) == 0 {
		return "/runs"
	}
	return "/runs?" + q.Encode()
}

// runRow is one run in the list.
type runRow struct {
	runlist.Row
	// Visits, Usage and Changed come from the run's latest checkpoint;
	// Known says it could be read.
	Visits  int
	Usage   agent.Usage
	Known   bool
	Changed time.Time
	// Questions counts an open run's pending questions.
	Questions int
}

type runsView struct {
	Filter   runlist.Filter
	Statuses []string
	// Total is how many runs match; Exact says it was counted run by run
	// (a namespace of many executions is counted by executions).
	Total int64
	Exact bool
	Rows  []runRow
	// Waiting are the runs waiting for a person, shown above the list on
	// its first page.
	Waiting []runRow
	// NextURL is the next page ("" on the last), FirstURL the first
	// (set on later pages).
	NextURL  string
	FirstURL string
	Paged    bool
	Err      string
	// Down is what is down (no worker polls), for the page's status.
	Down string
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) error {
	v := runsView{Statuses: runlist.Statuses}
	f, err := runlist.Parse(r.URL.Query())
	v.Filter = f
	if err != nil {
		v.Err = err.Error()
		return s.render(w, r, http.StatusBadRequest, "runs", page{Title: "Runs", Nav: "runs", Data: v})
	}
	rep := s.opts.Actions.Health(r.Context(), "")
	if rep.Temporal != nil {
		return temporalDown(rep)
	}
	if err := s.listRuns(r.Context(), r, f, &v, &rep); err != nil {
		return err
	}
	v.Down = rep.String()
	return s.render(w, r, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", Live: "/runs/events", Data: v})
}

// listRuns reads one page of runs from visibility, and the waiting ones.
// Visibility that does not answer is Temporal down.
// rep is what is down; an open run listed settles whether a worker is
// there (a worker that stopped is listed as polling for a minute), and
// with none, no run is asked anything.
func (s *Server) listRuns(ctx context.Context, r *http.Request, f runlist.Filter, v *runsView, rep *health.Report) error {
	var token []byte
	if t := r.URL.Query().Get("page"); t != "" {
		var err error
		if token, err = base64.RawURLEncoding.DecodeString(t); err != nil {
			return badRequest("Runs", errors.New("the page link is damaged; start again from the first page"))
		}
		v.Paged, v.FirstURL = true, runsURL(f, "")
	}
	g, gctx := errgroup.WithContext(ctx)
	var pg *runlist.Page
	g.Go(func() error {
		var err error
		pg, err = runlist.List(gctx, s.opts.Temporal, f, token, runsPerPage)
		return err
	})
	g.Go(func() error {
		var err error
		v.Total, v.Exact, err = s.countRuns(gctx, f)
		return err
	})
	if !v.Paged && (f.Status == "" || f.Status == runstore.StatusWaiting) && f.Q == "" {
		g.Go(func() error {
			wf := f
			wf.Status = runstore.StatusWaiting
			waiting, err := runlist.List(gctx, s.opts.Temporal, wf, nil, runsPerPage)
			if err == nil {
				v.Waiting = rowsOf(waiting.Rows)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return &downError{"Temporal's visibility did not list the runs: " + err.Error()}
	}
	v.Rows = rowsOf(pg.Rows)
	if len(pg.Next) > 0 {
		v.NextURL = runsURL(f, base64.RawURLEncoding.EncodeToString(pg.Next))
	}
	if !rep.Down() {
		for _, row := range append(slices.Clone(v.Waiting), v.Rows...) {
			if row.Open() {
				*rep = s.opts.Actions.Health(ctx, row.ID)
				break
			}
		}
	}
	s.fillRows(ctx, v.Rows)
	s.fillRows(ctx, v.Waiting)
	if !rep.Down() {
		s.fillQuestions(ctx, v.Waiting)
	}
	// A waiting run in the list shows its count too.
	for i := range v.Rows {
		for _, wr := range v.Waiting {
			if wr.ID == v.Rows[i].ID {
				v.Rows[i].Questions = wr.Questions
				v.Rows[i].Visits, v.Rows[i].Usage, v.Rows[i].Known = wr.Visits, wr.Usage, wr.Known
			}
		}
	}
	return nil
}

func rowsOf(rows []runlist.Row) []runRow {
	out := make([]runRow, len(rows))
	for i, r := range rows {
		out[i] = runRow{Row: r, Changed: r.Closed}
	}
	return out
}

// countRuns is how many runs match f, remembered for a moment: counting
// a namespace's runs exactly lists it.
func (s *Server) countRuns(ctx context.Context, f runlist.Filter) (int64, bool, error) {
	key := runsURL(f, "")
	if c, ok := s.caches.counts.get(key); ok {
		return c.n, c.exact, nil
	}
	n, exact, err := runlist.Count(ctx, s.opts.Temporal, f)
	if err == nil {
		s.caches.counts.put(key, runCount{n, exact})
	}
	return n, exact, err
}

// runCount is a remembered count of runs.
type runCount struct {
	n     int64
	exact bool
}

// summary is what a list needs of a run's latest checkpoint.
type summary struct {
	visits  int
	usage   agent.Usage
	changed time.Time
	pending int
}

// fillRows reads each listed run's visits, usage and last change from its
// latest checkpoint, a few at a time. A run whose checkpoint cannot be
// read keeps what visibility said.
func (s *Server) fillRows(ctx context.Context, rows []runRow) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range rows {
		row := &rows[i]
		open := row.Open()
		key := row.ID + "\x00" + row.Execution + "\x00" + row.Status
		if sum, ok := s.caches.summaries.get(key); ok {
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
			ttl := checkpointMemory
			if open {
				ttl = openSummaryTTL
			}
			s.caches.summaries.putFor(key, sum, ttl)
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
	// A closed run asks nothing, whatever its last checkpoint's pause.
	if row.Questions == 0 && row.Open() {
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

// fillQuestions asks each waiting run whose checkpoint counted no pending
// question (fillRows) for its questions: the live query knows a fan-out
// branch's too. A run whose waiting checkpoint lists its questions is not
// asked: a query per waiting run made a namespace with many of them wait
// seconds for its list on a busy server (docs/performance.md).
func (s *Server) fillQuestions(ctx context.Context, rows []runRow) {
	var wg sync.WaitGroup
	for i := range rows {
		if rows[i].Known && rows[i].Questions > 0 {
			continue
		}
		wg.Add(1)
		go func(row *runRow) {
			defer wg.Done()
			qctx, cancel := context.WithTimeout(ctx, health.ProbeWait)
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

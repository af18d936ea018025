package e2e

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"golang.org/x/sync/errgroup"

	"github.com/tether-run/tether/internal/graph"
)

// TestConsoleFiltersSearchesAndPagesRuns: 52 runs of one graph that
// complete and one of another that waits. The runs page pages them 50 at
// a time with Temporal's page tokens (each run on exactly one page); its
// filters by status, graph, node and backend and its search by a run id's
// start list exactly the matching runs; a filter a person sets in the
// form is kept in the page's address; a value that cannot be searched for
// is refused with a message, not put in a query.
func TestConsoleFiltersSearchesAndPagesRuns(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	parse := func(src string) *graph.Graph {
		g, err := graph.Parse([]byte(src), "runs.yaml")
		require.NoError(t, err)
		return g
	}
	quick := parse(`{name: quick, start: a, nodes: [{id: a, kind: agent, backend: scripted, prompt: go, script: ["ok"]}, {id: end, kind: end}], edges: [{from: a, to: end}]}`)
	asks := parse(`{name: asks, start: q, nodes: [{id: q, kind: human, question: "Ship it?"}, {id: end, kind: end}], edges: [{from: q, to: end}]}`)
	const done = 52
	var all []string
	var g errgroup.Group
	g.SetLimit(8)
	for i := range done {
		id := fmt.Sprintf("list-done-%02d", i)
		all = append(all, id)
		g.Go(func() error { h.start(id, quick, nil); return nil })
	}
	require.NoError(t, g.Wait())
	all = append(all, "list-ask")
	h.start("list-ask", asks, nil)
	h.waitQuestion("list-ask")
	count := func(q string) int64 {
		resp, err := h.c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: q})
		require.NoError(t, err)
		return resp.GetCount()
	}
	// Visibility catches up with the runs' search attributes on its own
	// time: wait for it, as a person would see the list settle.
	deadline := time.Now().Add(runWait)
	for count(`TetherStatus = "completed" AND TetherGraph = "quick"`) < done || count(`TetherStatus = "waiting"`) < 1 {
		require.True(t, time.Now().Before(deadline), "the runs did not settle in visibility")
		time.Sleep(500 * time.Millisecond)
	}

	c := startConsole(t, h, nil)
	first := getRuns(t, c.URL+"/runs")
	require.Contains(t, first.body, fmt.Sprintf("%d runs;", done+1))
	require.Equal(t, []string{"list-ask"}, first.waiting, "the waiting run is on top")
	require.Len(t, first.rows, 50, "a page holds 50 runs")
	require.NotEmpty(t, first.next, "a next page")
	second := getRuns(t, c.URL+first.next)
	require.Len(t, second.rows, done+1-50)
	require.Empty(t, second.next, "the second page is the last")
	require.Contains(t, second.body, "« First page")
	require.Empty(t, second.waiting, "the waiting runs are shown on the first page only")
	got := append(slices.Clone(first.rows), second.rows...)
	slices.Sort(got)
	slices.Sort(all)
	require.Equal(t, all, got, "every run on exactly one page")

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"status=waiting", []string{"list-ask"}},
		{"graph=asks", []string{"list-ask"}},
		{"node=q", []string{"list-ask"}},
		{"q=list-done-1", []string{"list-done-10", "list-done-11", "list-done-12", "list-done-13", "list-done-14", "list-done-15", "list-done-16", "list-done-17", "list-done-18", "list-done-19"}},
		{"q=list-ask", []string{"list-ask"}},
		{"status=completed&graph=asks", nil},
		{"backend=scripted&q=list-done-0", []string{"list-done-00", "list-done-01", "list-done-02", "list-done-03", "list-done-04", "list-done-05", "list-done-06", "list-done-07", "list-done-08", "list-done-09"}},
	} {
		p := getRuns(t, c.URL+"/runs?"+tc.query)
		rows := slices.Clone(p.rows)
		slices.Sort(rows)
		require.Equal(t, tc.want, rows, "runs matching %s", tc.query)
		require.Contains(t, p.body, fmt.Sprintf(`id="total">%d run`, len(tc.want)), "the count of runs matching %s", tc.query)
	}
	backend := getRuns(t, c.URL+"/runs?backend=scripted")
	require.Contains(t, backend.body, fmt.Sprintf("%d runs match", done), "every scripted run, and not the human one")
	require.NotContains(t, backend.rows, "list-ask")

	for query, msg := range map[string]string{
		"status=bogus":                          `unknown status &#34;bogus&#34;`,
		"graph=" + url.QueryEscape(`x" OR 1=1`): "cannot be searched for",
		"q=" + url.QueryEscape(payload):         "cannot be searched for",
	} {
		p := getRuns(t, c.URL+"/runs?"+query)
		require.Equal(t, http.StatusBadRequest, p.status, "a refused filter is a bad request")
		require.Contains(t, p.body, msg, "the runs page refuses %s", query)
		require.Empty(t, p.rows, "a refused filter lists nothing")
		require.NotContains(t, p.body, payload, "what was searched for is shown escaped")
	}

	// In the browser: the form's status filter, kept in the address.
	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate(c.URL+"/runs"))
	waitText(t, ctx, "#runs", "list-done-")
	do(t, ctx, chromedp.SetValue(css(`form.filters select[name=status]`), "waiting"))
	do(t, ctx, chromedp.Click(css(`form.filters button[type=submit]`)))
	waitLocation(t, ctx, "status=waiting")
	waitText(t, ctx, "#runs", "list-ask")
	require.NotContains(t, text(t, ctx, "#runs"), "list-done-")
	require.Contains(t, eval[string](t, ctx, `location.search`), "status=waiting")
	screenshot(t, ctx, "runs-filtered")
}

// runsPage is what one runs page lists.
type runsPage struct {
	body    string
	waiting []string // the runs in "Waiting for a person"
	rows    []string // the runs in the list
	next    string   // the next page's address
	status  int
}

var (
	runLink  = regexp.MustCompile(`<a href="/runs/([^"#?]+)">`)
	nextLink = regexp.MustCompile(`<a href="([^"]+)">Next page »</a>`)
)

// getRuns fetches a runs page as a script would, and reads its lists.
func getRuns(t *testing.T, u string) runsPage {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, []int{http.StatusOK, http.StatusBadRequest}, resp.StatusCode, "%s: %s", u, b)
	p := runsPage{body: string(b), status: resp.StatusCode}
	section := func(start, end string) string {
		i := strings.Index(p.body, start)
		if i < 0 {
			return ""
		}
		rest := p.body[i:]
		if j := strings.Index(rest, end); j >= 0 {
			return rest[:j]
		}
		return rest
	}
	links := func(s string) []string {
		var out []string
		for _, m := range runLink.FindAllStringSubmatch(s, -1) {
			out = append(out, html.UnescapeString(m[1]))
		}
		return out
	}
	p.waiting = links(section(`id="waiting"`, `</section>`))
	p.rows = links(section(`id="runs"`, `</table>`))
	if m := nextLink.FindStringSubmatch(p.body); m != nil {
		p.next = html.UnescapeString(m[1])
	}
	return p
}

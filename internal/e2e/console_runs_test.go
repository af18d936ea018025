package e2e

import (
	"context"
	"encoding/json"
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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"golang.org/x/sync/errgroup"

	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runlist"
	"github.com/tether-run/tether/internal/runstore"
)

// TestConsoleListsARewoundRunOnce: a run rewound twice has three
// executions under its id, and is one row on the runs page (its latest
// execution's status, ×3), counted once; a filter by an earlier
// execution's status does not list it, and no closed run carries a
// question badge. `tether list` lists it the same way, with its filters.
func TestConsoleListsARewoundRunOnce(t *testing.T) {
	h, dir := cliHarness(t)
	id := "rewound"
	file := graphFile(t, "ask")
	h.tether(t, dir, "run", file, "--id", id)
	for round := range 3 {
		q := h.waitQuestion(id)
		if round == 2 {
			break
		}
		h.answer(id, q.ID, "yes")
		_, err := h.result(h.c.GetWorkflow(context.Background(), id, ""))
		require.NoError(t, err)
		h.tether(t, dir, "rewind", id, "--to", "1")
	}
	// A run canceled while it waited: closed, its last checkpoint paused.
	h.tether(t, dir, "run", file, "--id", "closed-ask")
	h.waitQuestion("closed-ask")
	h.tether(t, dir, "cancel", "closed-ask")
	h.waitListed(`WorkflowId = "rewound"`, id, id, id)

	c := startConsole(t, h, nil)
	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate(c.URL+"/runs"))
	waitText(t, ctx, "#runs", id)
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll("#runs tr")].slice(1).map(r => r.innerText)`)
	var mine []string
	for _, r := range rows {
		if strings.Contains(r, id) {
			mine = append(mine, r)
		}
	}
	require.Len(t, mine, 1, "one row for the run: %q", rows)
	assert.Contains(t, mine[0], "waiting")
	assert.Contains(t, mine[0], "×3", "its executions")
	assert.Contains(t, text(t, ctx, "#total"), "2 runs")
	closed := text(t, ctx, `#runs tr:has(a[href="/runs/closed-ask"])`)
	assert.Contains(t, closed, "canceled")
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#runs tr:has(a[href="/runs/closed-ask"]) .count').length`), "no badge on a closed run")
	screenshot(t, ctx, "runs-rewound")

	do(t, ctx, chromedp.Navigate(c.URL+"/runs?status=completed"))
	waitText(t, ctx, "#total", "0 runs")
	assert.NotContains(t, text(t, ctx, "#runs"), id, "its earlier executions completed; the run waits")
	do(t, ctx, chromedp.Navigate(c.URL+"/runs/"+id))
	waitText(t, ctx, "#facts", "Executions")
	assert.Contains(t, text(t, ctx, "#facts"), "3")
	assert.Contains(t, text(t, ctx, "#facts"), "Started")

	out := h.tether(t, dir, "list")
	assert.Equal(t, 1, strings.Count(out, id+" "), out)
	out = h.tether(t, dir, "list", "--waiting", "--json")
	var listed []runlist.Row
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Len(t, listed, 1, out)
	assert.Equal(t, id, listed[0].ID)
	assert.Equal(t, 3, listed[0].Executions)
	assert.Equal(t, runstore.StatusWaiting, listed[0].Status)
	out = h.tether(t, dir, "list", "--status", "completed")
	assert.Contains(t, out, "no runs match")
	out = h.tether(t, dir, "list", "--graph", "ask", "--status", "canceled")
	assert.Contains(t, out, "closed-ask")
	assert.NotContains(t, out, id+" ")
	code, out := tetherCode(t, "list", "--status", "bogus")
	assert.Equal(t, cli.ExitUsage, code, out)
	code, out = tetherCode(t, "list", "--graph", `x" OR 1=1`)
	assert.Equal(t, cli.ExitUsage, code, out)
}

// TestConsolePagesReadRight: a diff's code starts at the left of its
// table (its line-number columns narrow), a tool visit's page shows its
// command, a run page its inputs, times and duration and a graph that
// zooms and opens alone, and a fan-out's attempts page never shows a
// branch's output as JSON, in a heading or a box.
func TestConsolePagesReadRight(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	g := testGraph(t, "pages")
	_, err := h.result(h.start("pages", g, map[string]any{"topic": "sea otters"}))
	require.NoError(t, err)
	pick := testGraph(t, "ws-pick")
	_, err = h.result(h.start("pages-pick", pick, nil))
	require.NoError(t, err)
	c := startConsole(t, h, nil)
	ctx := newBrowser(t)

	do(t, ctx, chromedp.Navigate(c.URL+"/runs/pages/visits/write/1"))
	waitText(t, ctx, "#command", `sh -c 'printf`)
	assert.Contains(t, text(t, ctx, "#files"), "1 file,", "plurals")
	codeAt := eval[float64](t, ctx, `(() => {
		const table = document.querySelector("#files table.diff");
		const code = table.querySelector("tr:not(.hunk) td.code");
		const t = table.getBoundingClientRect(), c = code.getBoundingClientRect();
		return (c.left - t.left) / t.width;
	})()`)
	t.Logf("the diff's code starts at %.1f%% of its table's width", 100*codeAt)
	assert.Less(t, codeAt, 0.15, "the code starts left of 15%% of the table")
	assert.Equal(t, "left", eval[string](t, ctx, `getComputedStyle(document.querySelector("#files td.code")).textAlign`))
	screenshot(t, ctx, "visit-tool")

	do(t, ctx, chromedp.Navigate(c.URL+"/runs/pages"))
	facts := text(t, ctx, "#facts")
	for _, want := range []string{"Started", "Ended", "Took", "Inputs", "topic", "sea otters", "rounds", "2"} {
		assert.Contains(t, facts, want)
	}
	assert.True(t, eval[bool](t, ctx, `document.querySelectorAll("#graph .zoombar button").length === 4`), "the graph has its zoom buttons")
	w0 := eval[float64](t, ctx, `+document.querySelector("#graph svg").getAttribute("width")`)
	do(t, ctx, chromedp.Click(css(`#graph .zoombar button[title="larger"]`)))
	w1 := eval[float64](t, ctx, `+document.querySelector("#graph svg").getAttribute("width")`)
	assert.Greater(t, w1, w0, "+ zooms in")
	do(t, ctx, chromedp.Click(css(`#graph-alone`)))
	waitLocation(t, ctx, "/runs/pages/graph")
	waitText(t, ctx, "h1", "Graph pages")
	assert.True(t, eval[bool](t, ctx, `document.querySelector(".graph.alone svg") !== null`))

	do(t, ctx, chromedp.Navigate(c.URL+"/runs/pages-pick"))
	do(t, ctx, chromedp.Click(css(`#fanouts a`)))
	waitText(t, ctx, "h1", "Attempts at best")
	heads := eval[[]string](t, ctx, `[...document.querySelectorAll(".attempt h3")].map(h => h.innerText)`)
	for _, hd := range heads {
		assert.NotContains(t, hd, "{", "a heading holds no JSON: %q", hd)
		assert.Less(t, len(hd), 120, "a heading is short: %q", hd)
	}
	body := text(t, ctx, ".attempts")
	for _, js := range []string{`"exit_code"`, `"duration_ms"`, `{"`} {
		assert.NotContains(t, body, js, "no branch's output as JSON")
	}
	overflow := eval[bool](t, ctx, `[...document.querySelectorAll(".attempt")].some(a => a.scrollWidth > a.clientWidth + 1)`)
	assert.False(t, overflow, "nothing overflows its attempt's card")
	assert.Less(t, eval[float64](t, ctx, `(() => {
		const table = document.querySelector("#compare table.diff");
		const code = table.querySelector("tr:not(.hunk) td.code");
		return (code.getBoundingClientRect().left - table.getBoundingClientRect().left) / table.getBoundingClientRect().width;
	})()`), 0.15, "the compare diff too")
}

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

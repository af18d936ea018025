package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cli"
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

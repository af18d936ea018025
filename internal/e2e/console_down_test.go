package e2e

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cli"
)

// postTook is how long the last form's POST took, in milliseconds, as
// the browser measured it: the POST is the redirect of the page the form
// led to (Navigation Timing).
const postTook = `(() => {
	const n = performance.getEntriesByType("navigation")[0];
	return n.redirectEnd > 0 ? n.redirectEnd - n.redirectStart : -1;
})()`

// TestConsoleSaysNoWorker: with no worker polling the task queue, the run
// page, the runs page and the questions page say so in their main status
// (not a footer), within seconds of the worker stopping; an answer from
// the page comes back within a second, queued and saying so, and the run
// takes it when a worker starts. An address's ?refused= text is never
// shown on the page.
func TestConsoleSaysNoWorker(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	id := "down-1"
	g := testGraph(t, "two-questions")
	h.start(id, g, nil)
	require.Equal(t, "first-1", h.waitQuestion(id).ID)
	c := startConsole(t, h, nil)
	h.stopWorker()

	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate(c.URL+"/runs/"+id))
	waitText(t, ctx, "main", "Ship it?")
	down := text(t, ctx, "#down")
	assert.Contains(t, down, "No worker", down)
	assert.Contains(t, down, "start tether-worker")
	assert.Contains(t, text(t, ctx, "#running"), "the run waits for a worker")
	screenshot(t, ctx, "run-no-worker")

	for _, page := range []string{"/runs", "/questions"} {
		do(t, ctx, chromedp.Navigate(c.URL+page))
		waitText(t, ctx, "#down", "No worker")
		assert.Contains(t, text(t, ctx, "#down"), "start tether-worker", page)
	}

	// The answer is queued at once, and says so.
	do(t, ctx, chromedp.Navigate(c.URL+"/runs/"+id))
	do(t, ctx,
		chromedp.SendKeys(css(`#questions textarea[name=text]`), "yes, queued"),
		chromedp.Click(css(`#questions button[type=submit]`)),
	)
	waitText(t, ctx, "#flash", "queued, not yet taken")
	flash := text(t, ctx, "#flash")
	assert.Contains(t, flash, "no worker")
	assert.Contains(t, flash, "the run takes it when a worker starts")
	took := eval[float64](t, ctx, postTook)
	t.Logf("the answer's POST took %.0f ms", took)
	require.GreaterOrEqual(t, took, 0.0, "the browser measured the POST")
	assert.Less(t, took, 1000.0, "an answer with no worker comes back within a second")
	assert.Contains(t, text(t, ctx, "#questions"), "An answer is queued, not yet taken: yes, queued")
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll("#questions form").length`), "no second form for a queued answer")
	screenshot(t, ctx, "answer-queued")

	// A worker starts: the run takes the queued answer and moves on.
	h.startWorker()
	require.Equal(t, "second-1", h.waitQuestion(id).ID)
	// A worker polls again: within seconds the page says nothing is down
	// (a worker replaying the run may miss the first look).
	require.Eventually(t, func() bool {
		do(t, ctx, chromedp.Reload())
		waitText(t, ctx, "#questions", "Really?")
		return eval[int](t, ctx, `document.querySelectorAll("#down").length`) == 0
	}, time.Minute, time.Second, "the page still says a worker is missing")

	// Words in the address are never the page's message.
	for _, q := range []string{"refused", "ok"} {
		do(t, ctx, chromedp.Navigate(c.URL+"/runs/"+id+"?"+q+"=Your+account+is+locked%3A+call+555-0100"))
		waitText(t, ctx, "main", "Really?")
		assert.NotContains(t, text(t, ctx, "body"), "account is locked", "?%s= is not shown", q)
		assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll("#flash").length`))
	}
}

// TestConsoleAndCLISayTemporalIsDown: with Temporal stopped, the runs,
// run and questions pages are an error page that says so (503), never
// "No runs yet" nor an answer form built from the run store; `tether
// status` prints what the store holds, says Temporal is unreachable and
// exits 1.
func TestConsoleAndCLISayTemporalIsDown(t *testing.T) {
	h, _ := fileHarness(t)
	id := "t-down"
	g := testGraph(t, "two-questions")
	h.start(id, g, nil)
	h.waitQuestion(id)
	c := startConsole(t, h, nil)
	h.stopWorker()
	h.srv.Stop()

	ctx := newBrowser(t)
	for _, page := range []string{"/runs", "/runs/" + id, "/questions"} {
		do(t, ctx, chromedp.Navigate(c.URL+page))
		waitText(t, ctx, "h1", "Temporal is unreachable")
		body := text(t, ctx, "body")
		assert.Contains(t, text(t, ctx, "#error"), "Temporal is unreachable at "+h.srv.Address, page)
		assert.NotContains(t, body, "No runs", page)
		assert.NotContains(t, body, "Ship it?", "%s shows nothing from the store alone", page)
		assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll("form textarea").length`), "%s has no answer form", page)
		if page == "/runs/"+id {
			screenshot(t, ctx, "temporal-down")
		}
	}

	h.useCLI(t)
	start := time.Now()
	code, out := tetherCode(t, "status", id)
	t.Logf("tether status with Temporal down (%s):\n%s", time.Since(start).Round(time.Millisecond), out)
	assert.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, "status:     waiting", "what the store holds")
	assert.Contains(t, out, "Temporal is unreachable at "+h.srv.Address)
	assert.Contains(t, out, "what is shown is the run store's, which may be behind the run")
	assert.NotContains(t, out, "answer with:", "no answer is offered for a run Temporal cannot be asked about")
	code, out = tetherCode(t, "list")
	assert.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, "cannot reach Temporal at "+h.srv.Address, out)
}

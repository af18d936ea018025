package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cli"
)

// TestConsoleAnswerAndFollow: review-loop waits for its approval; the runs
// page lists it as waiting, the run page's form answers it, and a runs
// page left open in another tab shows the run complete without a reload.
func TestConsoleAnswerAndFollow(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	id := "console-review"
	h.start(id, loadGraph(t, "examples/review-loop.yaml"), nil)
	h.waitQuestion(id)
	c := startConsole(t, h, nil)

	list := newBrowser(t)
	do(t, list, chromedp.Navigate(c.URL+"/runs"))
	waitText(t, list, "#runs", id)
	require.Contains(t, text(t, list, "#runs tr.waiting"), "waiting")
	require.Contains(t, text(t, list, "#waiting"), id, "a waiting run is listed on top")
	screenshot(t, list, "runs")
	eval[bool](t, list, `window.tetherStayed = true`)

	tab := newTab(t, list)
	do(t, tab, chromedp.Navigate(c.URL+"/runs"), chromedp.Click(css(`#runs a[href="/runs/`+id+`"]`)))
	waitText(t, tab, "#questions", "Publish draft?")
	screenshot(t, tab, "run-waiting")
	do(t, tab,
		chromedp.SendKeys(css(`#questions textarea[name=text]`), "yes, publish"),
		chromedp.Click(css(`#questions button[type=submit]`)),
	)
	waitText(t, tab, "#flash", "accepted by run "+id)
	waitText(t, tab, "h1", "completed")
	waitText(t, tab, "#timeline", "approve")

	// The list never navigated: its live stream brought the news.
	waitText(t, list, "#runs", "completed")
	require.True(t, eval[bool](t, list, `window.tetherStayed === true`), "the runs page was reloaded")
	require.NotContains(t, text(t, list, "body"), "Waiting for a person")
}

// TestConsoleShowsTheRunsRefusal: an answer to a question someone else
// answered meanwhile (the page was open before) comes back with the run's
// own refusal, as `tether answer` would print it.
func TestConsoleShowsTheRunsRefusal(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	id := "console-twice"
	require.Equal(t, "first-1", askTwo(t, h, id))
	c := startConsole(t, h, nil)
	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate(c.URL+"/questions"))
	waitText(t, ctx, "main", "Ship it?")
	screenshot(t, ctx, "questions")

	h.answer(id, "first-1", "yes")
	require.Equal(t, "second-1", h.waitQuestion(id).ID)

	do(t, ctx,
		chromedp.SendKeys(css(`form textarea[name=text]`), "yes again"),
		chromedp.Click(css(`form button[type=submit]`)),
	)
	waitText(t, ctx, "#flash", "answer refused by run "+id)
	msg := text(t, ctx, "#flash")
	require.Contains(t, msg, `question already answered: "first-1" was answered with "yes"`)
	require.Contains(t, text(t, ctx, "main"), "Really?", "the page lists the question still pending")
	screenshot(t, ctx, "answer-refused")
}

// payload is what a hostile agent or tool writes: if a page ever put it
// in the DOM as markup, the browser would set window.tetherPwned.
const payload = `<img src=x onerror="window.tetherPwned=1">`

// TestConsoleEscapesWhatAgentsWrite: an agent's reply, a tool's output, a
// file name and a file's content holding markup show as text on every
// page, and never run.
func TestConsoleEscapesWhatAgentsWrite(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	id := "console-hostile"
	g := parseGraph(t, graphYAML(t, "hostile", "PAYLOAD", fmt.Sprintf("%q", payload)), "hostile.yaml")
	h.start(id, g, nil)
	q := h.waitQuestion(id)
	require.Equal(t, payload, q.Text)
	c := startConsole(t, h, nil)
	ctx := newBrowser(t)
	for _, page := range []string{"/questions", "/runs/" + id, "/runs/" + id + "/visits/writer/1", "/runs/" + id + "/visits/tool/1"} {
		do(t, ctx, chromedp.Navigate(c.URL+page))
		waitText(t, ctx, "main", payload)
		pwned := eval[bool](t, ctx, `window.tetherPwned !== undefined || document.querySelector("main img") !== null`)
		require.False(t, pwned, "page %s ran or drew what an agent wrote", page)
	}
	require.Contains(t, text(t, ctx, "#files"), payload+".txt", "the file name shows as text")
	screenshot(t, ctx, "visit-hostile")
}

// TestConsoleRewindsFromThePage: a completed run is rewound from its
// checkpoint list to the checkpoint where it waited for its approval; it
// continues from there and waits again.
func TestConsoleRewindsFromThePage(t *testing.T) {
	h := newHarness(t, "")
	h.startWorker()
	id := "console-rewind"
	run := h.start(id, loadGraph(t, "examples/review-loop.yaml"), nil)
	q := h.waitQuestion(id)
	h.answer(id, q.ID, "yes")
	_, err := h.result(run)
	require.NoError(t, err)

	c := startConsole(t, h, nil)
	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate(c.URL+"/runs/"+id))
	waitText(t, ctx, "h1", "completed")
	seq := text(t, ctx, `#checkpoints tr:has(.st-waiting) td`)
	do(t, ctx, chromedp.Click(css(`#checkpoints tr:has(.st-waiting) a[href*="/act/rewind"]`)))
	waitText(t, ctx, "main", "Rewind this run?")
	require.Contains(t, text(t, ctx, "main"), "checkpoint "+seq)
	screenshot(t, ctx, "confirm-rewind")
	do(t, ctx, chromedp.Click(css(`form button[type=submit]`)))
	waitText(t, ctx, "#result", fmt.Sprintf("run %s rewound to checkpoint %s", id, seq))

	q = h.waitQuestion(id)
	require.Equal(t, "approve-1", q.ID, "the run continues from the checkpoint where approve-1 waited")
	st := h.state(id)
	require.Equal(t, 6, st.Steps, "the rewound run kept the six visits before the approval")
	do(t, ctx, chromedp.Click(css(`a[href="/runs/`+id+`"]`)))
	waitText(t, ctx, "h1", "waiting")
}

// TestConsoleGuardsItsDoor: beyond loopback the console will not start
// without a token; with one, a request without the session cookie gets
// 401, the login sets an HttpOnly, SameSite=Strict cookie, and a POST
// without the CSRF token gets 403. Every page carries a CSP without inline
// script.
func TestConsoleGuardsItsDoor(t *testing.T) {
	bin, err := tetherBin()
	require.NoError(t, err)
	cmd := exec.Command(bin, "console", "--addr", "0.0.0.0:0")
	cmd.Env = append(os.Environ(), "TETHER_CONSOLE_TOKEN=")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, cli.ExitUsage, ee.ExitCode())
	require.Contains(t, string(out), "refusing to listen on a non-loopback address without TETHER_CONSOLE_TOKEN")

	h := newHarness(t, "")
	h.startWorker()
	id := "console-door"
	askTwo(t, h, id)
	const token = "a-long-random-console-token-0123456789"
	c := startConsole(t, h, []string{"TETHER_CONSOLE_TOKEN=" + token})

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(c.URL + "/runs/" + id)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	policy := resp.Header.Get("Content-Security-Policy")
	require.Contains(t, policy, "script-src 'self'")
	require.NotContains(t, policy, "unsafe-inline")

	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate(c.URL+"/runs/"+id))
	waitText(t, ctx, "main", "asks for its token")
	screenshot(t, ctx, "login")
	do(t, ctx,
		chromedp.SendKeys(css(`#token`), token),
		chromedp.SendKeys(css(`#name`), "Ada"),
		chromedp.Click(css(`form button[type=submit]`)),
	)
	waitText(t, ctx, "#questions", "Ship it?")
	got, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	require.NoError(t, err)
	jar := map[string]*network.Cookie{}
	for _, ck := range got.Cookies {
		jar[ck.Name] = ck
	}
	session := jar["tether_session"]
	require.NotNil(t, session, "the login sets the session cookie")
	require.True(t, session.HTTPOnly)
	require.Equal(t, network.CookieSameSiteStrict, session.SameSite)
	require.True(t, jar["tether_csrf"].HTTPOnly)

	post := func(form url.Values) int {
		req, err := http.NewRequest(http.MethodPost, c.URL+"/runs/"+id+"/answer", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "tether_session", Value: session.Value})
		req.AddCookie(&http.Cookie{Name: "tether_csrf", Value: jar["tether_csrf"].Value})
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusForbidden, post(url.Values{"question": {"first-1"}, "text": {"forged"}}))
	require.Equal(t, http.StatusForbidden, post(url.Values{"question": {"first-1"}, "text": {"forged"}, "csrf": {"0123"}}))
	require.Equal(t, "first-1", h.waitQuestion(id).ID, "no forged answer reached the run")

	// The form, with its token, is taken; the run records who answered.
	do(t, ctx,
		chromedp.SendKeys(css(`#questions textarea[name=text]`), "yes"),
		chromedp.Click(css(`#questions button[type=submit]`)),
	)
	waitText(t, ctx, "#flash", "accepted")
	require.Equal(t, "second-1", h.waitQuestion(id).ID)
	do(t, ctx, chromedp.Reload())
	waitText(t, ctx, "#answered", "Ada (tether console)")
}

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
	require.Equal(t, "first-1", askTwo(t, h, id))
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
	askTwo(t, h, id)
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

// askTwo starts run id of the graph two-questions on h and returns the id
// of its first question once the run asks it.
func askTwo(t *testing.T, h *harness, id string) string {
	t.Helper()
	h.start(id, testGraph(t, "two-questions"), nil)
	return h.waitQuestion(id).ID
}

package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/health"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// stubActions answers as a run that is always waiting for "q-1"; it is
// the in-process stand-in of the CLI for the console's unit tests (the
// browser tests run the real one).
type stubActions struct {
	answered, queued []string
	// down, when set, is what Health reports.
	down *health.Report
}

func (a *stubActions) State(context.Context, string) (*RunState, error) {
	return &RunState{State: &runapi.State{RunID: "r", Graph: "g", Status: "waiting", Questions: []runapi.PendingQuestion{{ID: "q-1", Node: "ask", Text: "Ship <b>it</b>?"}}}, Temporal: "running"}, nil
}
func (a *stubActions) Live(context.Context, string) (*Live, error) { return &Live{}, nil }
func (a *stubActions) Health(context.Context, string) health.Report {
	if a.down != nil {
		return *a.down
	}
	return health.Report{Workers: health.WorkersUp, At: time.Now()}
}
func (a *stubActions) QueueAnswer(_ context.Context, _, _, text, _ string) error {
	a.queued = append(a.queued, text)
	return nil
}
func (a *stubActions) Graph(context.Context, string) (*graph.Graph, error) {
	return &graph.Graph{Name: "g", Start: "ask", Nodes: []graph.Node{{ID: "ask", Kind: graph.KindHuman}}}, nil
}
func (a *stubActions) Answer(_ context.Context, _, q, text, _ string) error {
	if q != "q-1" {
		return errors.New("answer refused: no pending question with this id")
	}
	a.answered = append(a.answered, text)
	return nil
}
func (a *stubActions) Guide(context.Context, string, string, string, string) (string, error) {
	return "", nil
}
func (a *stubActions) Cancel(context.Context, string) (string, error)        { return "", nil }
func (a *stubActions) Resume(context.Context, string) (string, error)        { return "", nil }
func (a *stubActions) Rewind(context.Context, string, int64) (string, error) { return "", nil }
func (a *stubActions) Fork(context.Context, string, int64) (string, string, error) {
	return "", "", nil
}
func (a *stubActions) Delete(context.Context, string) (string, error) { return "", nil }

func newTestServer(t *testing.T, addr, token string) (*httptest.Server, *stubActions) {
	t.Helper()
	b, err := blob.Open(context.Background(), "mem://")
	require.NoError(t, err)
	acts := &stubActions{}
	s, err := New(Options{Addr: addr, Token: token, Runs: runstore.New(b), Actions: acts, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, acts
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func TestCheckAddr(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "localhost:0", "[::1]:9"} {
		loop, err := CheckAddr(addr, "")
		require.NoError(t, err, addr)
		require.True(t, loop, addr)
	}
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "10.1.2.3:80", "example.com:80"} {
		_, err := CheckAddr(addr, "")
		require.ErrorIs(t, err, ErrNeedsToken, addr)
		require.Contains(t, err.Error(), TokenEnv)
		_, err = CheckAddr(addr, "0123456789abcdef0123")
		require.NoError(t, err, addr)
	}
	_, err := CheckAddr("0.0.0.0:1", "short")
	require.ErrorContains(t, err, "at least 16")
	_, err = CheckAddr("nonsense", "")
	require.ErrorContains(t, err, "host:port")
}

// get fetches path with the cookies of jar; it returns the response's
// status, body and the CSRF token the page's forms carry.
func get(t *testing.T, ts *httptest.Server, jar http.CookieJar, path string) (int, string, http.Header) {
	t.Helper()
	c := &http.Client{Jar: jar, CheckRedirect: noRedirects.CheckRedirect}
	resp, err := c.Get(ts.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func csrfOf(body string) string {
	_, rest, ok := strings.Cut(body, `name="csrf" value="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

func TestTokenAndCSRF(t *testing.T) {
	const token = "0123456789abcdef-token"
	ts, acts := newTestServer(t, "0.0.0.0:0", token)
	jar := newJar(t)
	status, body, hd := get(t, ts, jar, "/runs/r")
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, body, `name="token"`, "a 401 is the login page")
	require.Contains(t, hd.Get("Content-Security-Policy"), "script-src 'self'")
	require.NotContains(t, hd.Get("Content-Security-Policy"), "unsafe-inline")
	require.Equal(t, "nosniff", hd.Get("X-Content-Type-Options"))

	// A wrong token is refused; the right one logs in.
	post := func(path string, form url.Values, cookies bool) *http.Response {
		c := &http.Client{CheckRedirect: noRedirects.CheckRedirect}
		if cookies {
			c.Jar = jar
		}
		resp, err := c.PostForm(ts.URL+path, form)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	csrf := csrfOf(body)
	require.NotEmpty(t, csrf)
	require.Equal(t, http.StatusUnauthorized, post("/login", url.Values{"csrf": {csrf}, "token": {"wrong-token-0000000"}}, true).StatusCode)
	require.Equal(t, http.StatusForbidden, post("/login", url.Values{"token": {token}}, true).StatusCode, "a login without the CSRF token")
	resp := post("/login", url.Values{"csrf": {csrf}, "token": {token}, "next": {"/runs/r"}}, true)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/runs/r", resp.Header.Get("Location"))
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			session = c
		}
	}
	require.NotNil(t, session)
	require.True(t, session.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, session.SameSite)

	status, body, _ = get(t, ts, jar, "/runs/r")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Ship &lt;b&gt;it&lt;/b&gt;?", "a question is text")
	require.Contains(t, body, "Log out", "a person who logged in can log out")
	csrf = csrfOf(body)
	require.Equal(t, http.StatusForbidden, post("/runs/r/answer", url.Values{"question": {"q-1"}, "text": {"x"}}, true).StatusCode)
	require.Equal(t, http.StatusForbidden, post("/runs/r/answer", url.Values{"question": {"q-1"}, "text": {"x"}, "csrf": {csrf + "0"}}, true).StatusCode)
	require.Equal(t, http.StatusUnauthorized, post("/runs/r/answer", url.Values{"question": {"q-1"}, "text": {"x"}, "csrf": {csrf}}, false).StatusCode, "the form without the session")
	require.Empty(t, acts.answered)
	resp = post("/runs/r/answer", url.Values{"question": {"q-1"}, "text": {"yes"}, "csrf": {csrf}}, true)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, []string{"yes"}, acts.answered)
	require.Equal(t, "/runs/r", resp.Header.Get("Location"), "the outcome travels in a signed cookie, not the address")
	_, body, _ = get(t, ts, jar, "/runs/r")
	require.Contains(t, body, "Your answer to q-1 was accepted by run r.")
	_, body, _ = get(t, ts, jar, "/runs/r")
	require.NotContains(t, body, "was accepted", "a flash is shown once")

	// A refusal comes back as the page's flash, escaped.
	resp = post("/runs/r/answer", url.Values{"question": {"q-9"}, "text": {"yes"}, "csrf": {csrf}}, true)
	_, body, _ = get(t, ts, jar, strings.TrimPrefix(resp.Header.Get("Location"), ts.URL))
	require.Contains(t, body, "answer refused: no pending question with this id")

	// A script may use the token as a bearer, without cookies or CSRF.
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/runs/r/answer", strings.NewReader("question=q-1&text=bearer"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+token)
	r2, err := noRedirects.Do(req)
	require.NoError(t, err)
	r2.Body.Close()
	require.Equal(t, http.StatusSeeOther, r2.StatusCode)
	require.Equal(t, []string{"yes", "bearer"}, acts.answered)
}

// Without a token the console serves only requests that name a loopback
// host: a page elsewhere whose name resolves to 127.0.0.1 gets nothing.
func TestLoopbackHostOnly(t *testing.T) {
	ts, _ := newTestServer(t, "127.0.0.1:0", "")
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/healthz", nil)
	req.Host = "evil.example:8080"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
	status, _, _ := get(t, ts, newJar(t), "/healthz")
	require.Equal(t, http.StatusOK, status)
}

// TestFlashComesOnlyFromTheServer: words in a page's address are never
// shown as a message (a link to a real run's page with ?refused= or ?ok=
// would put any text there), and neither is a flash cookie the console
// did not sign, nor one meant for another page.
func TestFlashComesOnlyFromTheServer(t *testing.T) {
	ts, _ := newTestServer(t, "127.0.0.1:0", "")
	jar := newJar(t)
	for _, q := range []string{"refused=Your+account+is+locked%3A+call+555", "ok=Your+account+is+locked%3A+call+555"} {
		status, body, _ := get(t, ts, jar, "/runs/r?"+q)
		require.Equal(t, http.StatusOK, status)
		require.NotContains(t, body, "locked", "the address's text is not on the page")
		require.NotContains(t, body, `id="flash"`)
	}
	u, _ := url.Parse(ts.URL)
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"text":"Your account is locked","kind":"refused","path":"/runs/r"}`))
	jar.SetCookies(u, []*http.Cookie{{Name: flashCookie, Value: forged + ".0123456789abcdef"}})
	_, body, _ := get(t, ts, jar, "/runs/r")
	require.NotContains(t, body, "locked", "a flash the console did not sign is not shown")

	// One the console signed shows on its own page only.
	s := &security{key: bytes.Repeat([]byte{7}, 32)}
	rec := httptest.NewRecorder()
	s.setFlash(rec, httptest.NewRequest("POST", "/runs/r/answer", nil), flash{Text: "accepted", Kind: "ok", Path: "/runs/r"})
	req := httptest.NewRequest("GET", "/runs/other", nil)
	for _, c := range rec.Result().Cookies() {
		req.AddCookie(c)
	}
	require.Nil(t, s.takeFlash(httptest.NewRecorder(), req), "a flash for another page")
	req.URL.Path = "/runs/r"
	f := s.takeFlash(httptest.NewRecorder(), req)
	require.NotNil(t, f)
	require.Equal(t, "accepted", f.Text)
}

// TestAnswerWithNoWorkerIsQueued: with no worker, an answer goes as the
// signal Temporal keeps (never the update, which would wait for one),
// and the page says it is queued; an empty one cannot be queued; with
// Temporal unreachable nothing is sent and the pages are an error page.
func TestAnswerWithNoWorkerIsQueued(t *testing.T) {
	ts, acts := newTestServer(t, "127.0.0.1:0", "")
	acts.down = &health.Report{Queue: "tether", Workers: health.WorkersDown, At: time.Now()}
	jar := newJar(t)
	_, body, _ := get(t, ts, jar, "/runs/r")
	require.Contains(t, body, `id="down"`)
	require.Contains(t, body, "No worker has polled task queue &#34;tether&#34; in the last 5 min: start tether-worker")
	post := func(text string) string {
		c := &http.Client{Jar: jar, CheckRedirect: noRedirects.CheckRedirect}
		resp, err := c.PostForm(ts.URL+"/runs/r/answer", url.Values{"csrf": {csrfOf(body)}, "question": {"q-1"}, "text": {text}})
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		_, page, _ := get(t, ts, jar, resp.Header.Get("Location"))
		return page
	}
	page := post("yes")
	require.Equal(t, []string{"yes"}, acts.queued)
	require.Empty(t, acts.answered, "no update was sent")
	require.Contains(t, page, `class="flash queued"`)
	require.Contains(t, page, "Your answer to q-1 is queued, not yet taken")
	page = post("  ")
	require.Equal(t, []string{"yes"}, acts.queued, "an empty answer is not queued")
	require.Contains(t, page, "is empty, and it cannot be queued")

	acts.down = &health.Report{Address: "127.0.0.1:7233", Temporal: errors.New("connection refused"), At: time.Now()}
	page = post("again")
	require.Equal(t, []string{"yes"}, acts.queued)
	require.Contains(t, page, "Temporal is unreachable", "the error page")
	for _, p := range []string{"/runs", "/runs/r", "/questions"} {
		status, body, _ := get(t, ts, jar, p)
		require.Equal(t, http.StatusServiceUnavailable, status, p)
		require.Contains(t, body, "Temporal is unreachable at 127.0.0.1:7233 (connection refused)", p)
		require.NotContains(t, body, "<textarea", p)
	}
}

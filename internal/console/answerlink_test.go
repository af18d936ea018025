package console

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/answerlink"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// linkRun is a run waiting for "ask-1" until it is answered once, the way
// the run's answer update behaves.
type linkRun struct {
	stubActions
	answers []string
	// asking is the asking of ask-1 that waits (askedAt when empty).
	asking string
}

// askedAt is the asking of ask-1 the links of these tests were sent for.
const askedAt = "waiting/ask-1/3"

func (a *linkRun) State(context.Context, string) (*RunState, error) {
	st := &runapi.State{RunID: "r1", Graph: "g", Status: "waiting"}
	asking := a.asking
	switch asking {
	case "":
		asking = askedAt
	case "-":
		asking = ""
	}
	if len(a.answers) == 0 {
		st.Questions = []runapi.PendingQuestion{{ID: "ask-1", Node: "ask", Text: "Ship <b>it</b>?", Options: []string{"yes", "no"}, Asking: asking}}
	}
	return &RunState{State: st}, nil
}

func (a *linkRun) Answer(_ context.Context, run, q, text, by string) error {
	if len(a.answers) > 0 {
		return errors.New("answer refused by run r1: question already answered")
	}
	a.answers = append(a.answers, run+"/"+q+"="+text+" by "+by)
	return nil
}

var linkKey = bytes.Repeat([]byte{3}, 32)

func linkServer(t *testing.T, token string) (string, *linkRun) {
	t.Helper()
	b, err := blob.Open(context.Background(), "mem://")
	require.NoError(t, err)
	acts := &linkRun{}
	s, err := New(Options{Addr: "127.0.0.1:0", Token: token, Runs: runstore.New(b), Actions: acts, CacheDir: t.TempDir(), LinkKey: linkKey})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL, acts
}

func sign(t *testing.T, l answerlink.Link) string {
	t.Helper()
	tok, err := answerlink.Sign(linkKey, l)
	require.NoError(t, err)
	return tok
}

func linkGet(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// A link opens without a session even on a console with a token, shows
// the question escaped, and answers only once confirmed with the page's
// CSRF token; every kind of bad link is refused with its own reason.
func TestAnswerLinkPages(t *testing.T) {
	base, run := linkServer(t, "0123456789abcdef-console-token")
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	exp := time.Now().Add(time.Hour)
	link := base + answerlink.Path("r1", "ask-1", sign(t, answerlink.Link{Run: "r1", Question: "ask-1", Asking: askedAt, Answer: "yes", Fixed: true, Expires: exp}))

	code, page := linkGet(t, c, link)
	require.Equal(t, http.StatusOK, code, page)
	assert.Contains(t, page, "Ship &lt;b&gt;it&lt;/b&gt;?", "the question is text")
	assert.Contains(t, page, `id="the-answer">yes<`)
	assert.Empty(t, run.answers, "opening a link answers nothing")
	assert.NotContains(t, page, "Log out", "one who came by a link has no session to end")

	u, _ := url.Parse(link)
	form := url.Values{"t": {u.Query().Get("t")}}
	resp, err := c.PostForm(base+u.Path, form)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token: refused")
	assert.Empty(t, run.answers)

	form.Set("csrf", csrfField.FindStringSubmatch(page)[1])
	resp, err = c.PostForm(base+u.Path, form)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Contains(t, string(b), "accepted by run r1")
	assert.Equal(t, []string{"r1/ask-1=yes by answer link (tether console)"}, run.answers)

	code, page = linkGet(t, c, link)
	assert.Equal(t, http.StatusConflict, code, "the same link again")
	assert.Contains(t, page, "not waiting any more")

	tok := u.Query().Get("t")
	changed := []byte(tok)
	changed[len(changed)/3] ^= 2
	for name, tc := range map[string]struct {
		url    string
		status int
		reason string
	}{
		"changed byte": {base + answerlink.Path("r1", "ask-1", string(changed)), http.StatusForbidden, "This link is not valid"},
		"expired":      {base + answerlink.Path("r1", "ask-1", sign(t, answerlink.Link{Run: "r1", Question: "ask-1", Asking: askedAt, Expires: time.Now().Add(-time.Minute)})), http.StatusGone, "This link has expired"},
		"other run":    {base + answerlink.Path("r2", "ask-1", tok), http.StatusForbidden, "This link is for another run"},
		"other key":    {base + answerlink.Path("r1", "ask-1", otherKeyToken(t)), http.StatusForbidden, "This link is not valid"},
	} {
		code, page := linkGet(t, c, tc.url)
		assert.Equal(t, tc.status, code, name)
		assert.Contains(t, page, tc.reason, name)
	}
	assert.Len(t, run.answers, 1, "nothing was answered twice")
	assert.True(t, strings.Contains(page, "answered") || strings.Contains(page, "moved on"))
}

func otherKeyToken(t *testing.T) string {
	t.Helper()
	tok, err := answerlink.Sign(bytes.Repeat([]byte{4}, 32), answerlink.Link{Run: "r1", Question: "ask-1", Asking: askedAt, Expires: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	return tok
}

// A link answers only the asking it was sent for (security finding 6):
// once the run asked the question again (a rewind, a resume), a link sent
// before, a one-option link or a form link, is refused, page and
// confirmation alike, saying the question was asked again and where to
// answer it now. A link made before links named an asking is refused as
// such; so is every link while the run does not say when it asked.
func TestAnswerLinkForAnEarlierAsking(t *testing.T) {
	base, run := linkServer(t, "")
	c := &http.Client{}
	exp := time.Now().Add(time.Hour)
	run.asking = "waiting/ask-1/9"
	for _, l := range []answerlink.Link{
		{Run: "r1", Question: "ask-1", Asking: askedAt, Answer: "yes", Fixed: true, Expires: exp},
		{Run: "r1", Question: "ask-1", Asking: askedAt, Expires: exp},
	} {
		link := base + answerlink.Path("r1", "ask-1", sign(t, l))
		code, page := linkGet(t, c, link)
		assert.Equal(t, http.StatusConflict, code, page)
		assert.Contains(t, page, "This question was asked again")
		assert.Contains(t, page, "a link answers only the asking it was sent for")
		assert.Contains(t, page, `href="/runs/r1"`, "where to answer it now")
		u, _ := url.Parse(link)
		resp, err := c.PostForm(base+u.Path, url.Values{"t": {u.Query().Get("t")}, "option": {"yes"}})
		require.NoError(t, err)
		resp.Body.Close()
		assert.NotEqual(t, http.StatusOK, resp.StatusCode)
	}
	assert.Empty(t, run.answers)

	// The link of the asking that waits answers it.
	code, page := linkGet(t, c, base+answerlink.Path("r1", "ask-1", sign(t, answerlink.Link{Run: "r1", Question: "ask-1", Asking: "waiting/ask-1/9", Expires: exp})))
	assert.Equal(t, http.StatusOK, code, page)

	// A link of an older Tether: genuine, but it cannot say which asking.
	code, page = linkGet(t, c, base+answerlink.Path("r1", "ask-1", versionOneToken(t, `{"v":1,"r":"r1","q":"ask-1","a":"yes","x":`+strconv.FormatInt(exp.Unix(), 10)+`}`)))
	assert.Equal(t, http.StatusGone, code, page)
	assert.Contains(t, page, "This link is from an earlier version of Tether")
	assert.Contains(t, page, "tether answer r1 ask-1 TEXT")

	// A run whose worker does not say when it asked.
	run.asking = "-"
	code, page = linkGet(t, c, base+answerlink.Path("r1", "ask-1", sign(t, answerlink.Link{Run: "r1", Question: "ask-1", Asking: askedAt, Expires: exp})))
	assert.Equal(t, http.StatusConflict, code, page)
	assert.Empty(t, run.answers)
}

// versionOneToken is a link as Tether made them before links named an
// asking: the same format and key, payload version 1.
func versionOneToken(t *testing.T, payload string) string {
	t.Helper()
	m := hmac.New(sha256.New, linkKey)
	m.Write([]byte("tether answer link v1\x00"))
	m.Write([]byte(payload))
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(m.Sum(nil))
}

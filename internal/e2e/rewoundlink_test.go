package e2e

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/notify"
	"github.com/tether-run/tether/internal/notify/notifytest"
	"github.com/tether-run/tether/internal/runstore"
)

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// linkPage opens an answer link as a browser would.
func linkPage(t *testing.T, c *http.Client, link string) (int, string) {
	t.Helper()
	resp, err := c.Get(link)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// confirmLink opens an answer link and confirms its answer.
func confirmLink(t *testing.T, c *http.Client, link string) (int, string) {
	t.Helper()
	code, page := linkPage(t, c, link)
	require.Equal(t, http.StatusOK, code, page)
	u, err := url.Parse(link)
	require.NoError(t, err)
	resp, err := c.PostForm(u.Scheme+"://"+u.Host+u.Path, url.Values{"t": {u.Query().Get("t")}, "csrf": {csrfInput.FindStringSubmatch(page)[1]}})
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestAnswerLinkAfterRewind (security finding 6): an answer link names
// the asking it was sent for. After `tether rewind` to before the
// question, the run asks it again and tells people again; the link used
// before the rewind (whose answer was "ship") is refused, saying the
// question was asked again, and the new notice's link answers. After a
// rewind to the checkpoint that waited for it, the question is asked
// again too: the links of the asking before are refused.
func TestAnswerLinkAfterRewind(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, "file://"+dir)
	rcv := startReceiver(t)
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i + 1)
	}
	c := startConsole(t, h, []string{"TETHER_LINK_KEY=" + hex.EncodeToString(key)})
	sender, err := notify.NewSender([]notify.Endpoint{{Name: "ops", URL: rcv.URL()}}, notifySecret, c.URL, key, 0)
	require.NoError(t, err)
	h.notify = sender
	h.startWorker()
	g := testGraph(t, "rewound-link")
	const id = "rewound-link-1"
	run := h.start(id, g, nil)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}

	// noticed is the notice of the asking of ship-1 not seen before.
	seen := map[string]bool{}
	noticed := func() *notify.JSONQuestion {
		t.Helper()
		d := awaitDelivery(t, rcv, func(d notifytest.Delivery) bool {
			return d.Notice.Question != nil && d.Notice.Question.ID == "ship-1" && !seen[d.Key]
		})
		seen[d.Key] = true
		require.Len(t, d.Notice.Question.AnswerLinks, 2)
		return d.Notice.Question
	}
	waitEnd := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), runWait)
		defer cancel()
		require.NoError(t, h.c.GetWorkflow(ctx, id, "").Get(ctx, nil))
	}
	answered := func(want string) {
		t.Helper()
		cp, err := h.runs.Latest(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, runstore.StatusCompleted, cp.Status)
		assert.Equal(t, want, cp.Outputs["ship"]["answer"])
	}
	// asked is the latest asking's checkpoints: the last before it, and
	// the one taken while it waited.
	asked := func() (before, waiting int64) {
		t.Helper()
		infos, err := h.runs.List(context.Background(), id)
		require.NoError(t, err)
		for _, info := range infos {
			cp, err := h.runs.GetWhole(context.Background(), id, info.Seq)
			if errors.Is(err, runstore.ErrDropped) {
				continue
			}
			require.NoError(t, err)
			if cp.Pause != nil && waiting == 0 && info.Seq > before {
				waiting = info.Seq
			}
			if cp.Pause == nil && len(cp.Cursor) == 1 && cp.Cursor[0].Node == "ship" {
				before, waiting = info.Seq, 0
			}
		}
		require.NotZero(t, before)
		require.NotZero(t, waiting)
		return before, waiting
	}

	// The first asking, answered "ship" through its link.
	require.Equal(t, "ship-1", h.waitQuestion(id).ID)
	first := noticed()
	code, page := confirmLink(t, browser, first.AnswerLinks[0].URL)
	require.Equal(t, http.StatusOK, code, page)
	_, err = h.result(run)
	require.NoError(t, err)
	answered("ship")

	// Rewound to before the question: asked again, told again.
	before, _ := asked()
	h.tether(t, dir, "rewind", id, "--to", strconv.FormatInt(before, 10))
	require.Equal(t, "ship-1", h.waitQuestion(id).ID)
	second := noticed()
	assert.NotEqual(t, first.AnswerLinks[0].URL, second.AnswerLinks[0].URL)
	for _, old := range []string{first.AnswerLinks[0].URL, first.AnswerLinks[1].URL, first.AnswerForm} {
		code, page := linkPage(t, browser, old)
		assert.Equal(t, http.StatusConflict, code, page)
		assert.Contains(t, page, "This question was asked again")
		assert.Contains(t, page, "Answer it with the link of the newest notice about ship-1, or on the run&#39;s page")
	}
	require.Equal(t, "ship-1", h.waitQuestion(id).ID, "the old links answered nothing")
	code, page = confirmLink(t, browser, second.AnswerLinks[1].URL)
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, `Your answer &#34;hold&#34; to ship-1 was accepted`)
	waitEnd()
	answered("hold")

	// Rewound to the checkpoint that waited: asked again as well.
	_, waiting := asked()
	h.tether(t, dir, "rewind", id, "--to", strconv.FormatInt(waiting, 10))
	require.Equal(t, "ship-1", h.waitQuestion(id).ID)
	third := noticed()
	code, page = linkPage(t, browser, second.AnswerLinks[0].URL)
	assert.Equal(t, http.StatusConflict, code, page)
	assert.Contains(t, page, "This question was asked again")
	code, page = confirmLink(t, browser, third.AnswerLinks[0].URL)
	require.Equal(t, http.StatusOK, code, page)
	waitEnd()
	answered("ship")
	h.recordHistory("rewound-questions", id)
}

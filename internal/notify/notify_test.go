package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/answerlink"
	"github.com/tether-run/tether/internal/graph"
)

var (
	secret  = []byte("0123456789abcdef-notify-secret")
	linkKey = bytes.Repeat([]byte{7}, 32)
	when    = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
)

// hostile is question text an agent could write: Slack link and mention
// syntax, Markdown links, HTML.
const hostile = "Deploy? <!channel> <https://evil.example|click> [here](https://evil.example) & <b>now</b>"

func waiting() Notice {
	return Notice{
		Endpoint: "ops", Key: Key("r1", "waiting/judge-2/7", "ops"), Event: graph.NotifyWaiting, Run: "r1", Graph: "review-loop",
		Node: "judge", Status: "waiting", Time: when,
		Question: &Question{ID: "judge-2", Text: hostile, Options: []string{"approve", "revise"}, Asking: "waiting/judge-2/7"},
	}
}

func notices() []Notice {
	failed := Notice{Endpoint: "ops", Key: Key("r1", "failed/9", "ops"), Event: graph.NotifyFailed, Run: "r1", Graph: "g", Node: "writer", Status: "failed_resumable", Error: "required checkpoint failed: " + strings.Repeat("x", 5000), Time: when}
	done := Notice{Endpoint: "ops", Key: Key("r1", "completed/12", "ops"), Event: graph.NotifyCompleted, Run: "r1", Graph: "g", Node: "done", Status: "completed", Time: when}
	budget := Notice{Endpoint: "ops", Key: Key("r1", "budget/10", "ops"), Event: graph.NotifyBudget, Run: "r1", Graph: "g", Status: "failed_resumable", Error: "the run spent its max_tokens budget", Time: when}
	return []Notice{waiting(), failed, done, budget}
}

func sender(t *testing.T, url, format string) *Sender {
	t.Helper()
	s, err := NewSender([]Endpoint{{Name: "ops", URL: url, Format: format}}, secret, "https://tether.example.com/console/", linkKey, 0)
	require.NoError(t, err)
	s.Now = func() time.Time { return when.Add(time.Minute) }
	return s
}

func compile(t *testing.T, file string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", file))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(file, doc))
	sch, err := c.Compile(file)
	require.NoError(t, err)
	return sch
}

func body(t *testing.T, s *Sender, format string, n Notice) []byte {
	t.Helper()
	l, err := s.Links(n)
	require.NoError(t, err)
	b, err := Body(format, n, l)
	require.NoError(t, err)
	return b
}

// schemaValidBodies requires the body of every event's notice in format,
// sent to url, to validate against the schema in testdata/schemaFile, and
// returns the sender and the bodies.
func schemaValidBodies(t *testing.T, schemaFile, url, format string) (*Sender, [][]byte) {
	t.Helper()
	sch := compile(t, schemaFile)
	s := sender(t, url, format)
	var bodies [][]byte
	for _, n := range notices() {
		b := body(t, s, format, n)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		require.NoError(t, err)
		require.NoError(t, sch.Validate(inst), "%s notice:\n%s", n.Event, b)
		bodies = append(bodies, b)
	}
	return s, bodies
}

// A Slack-format notice of every event is a message Slack's incoming
// webhooks document: header, sections, buttons and context within their
// limits; the question's own link and mention syntax stays plain text.
func TestSlackBodyMatchesSlackSchema(t *testing.T) {
	s, bodies := schemaValidBodies(t, "slack-incoming-webhook.schema.json", "https://hooks.slack.com/services/T0/B0/X", FormatSlack)
	for _, b := range bodies {
		var m slackMessage
		require.NoError(t, json.Unmarshal(b, &m))
		ids := map[string]bool{}
		for _, bl := range m.Blocks {
			for _, e := range bl.Elements {
				if e.ActionID != "" {
					assert.False(t, ids[e.ActionID], "action ids are unique in a message")
					ids[e.ActionID] = true
				}
			}
		}
	}
	b := string(body(t, s, FormatSlack, waiting()))
	assert.NotContains(t, b, "<!channel>", "no mention")
	assert.NotContains(t, b, "<https://evil", "no link of the question's own")
	assert.Contains(t, b, `&lt;!channel&gt;`)
	assert.Contains(t, b, `"text":"approve"`, "a button per option")
	assert.Contains(t, b, `"url":"https://tether.example.com/console/answer/r1/judge-2?t=`, "answer links on the console's public address, its path kept")
	assert.Contains(t, b, `"url":"https://tether.example.com/console/runs/r1"`)
}

func TestTeamsBodyMatchesTeamsSchema(t *testing.T) {
	s, _ := schemaValidBodies(t, "teams-incoming-webhook.schema.json", "https://example.webhook.office.com/webhookb2/x", FormatTeams)
	b := string(body(t, s, FormatTeams, waiting()))
	assert.NotContains(t, b, "[here](https", "no Markdown link of the question's own")
	assert.Contains(t, b, `"title":"revise"`)
}

// The generic body carries what a receiver needs, links verify with the
// link key, and the same notice always gives the same bytes.
func TestJSONBody(t *testing.T) {
	s := sender(t, "https://receiver.example.com/hook", FormatJSON)
	n := waiting()
	b := body(t, s, FormatJSON, n)
	assert.Equal(t, b, body(t, s, FormatJSON, n), "a notice sent again is the same body")
	var got JSONNotice
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, n.Key, got.ID)
	assert.Equal(t, "waiting", got.Event)
	assert.Equal(t, "review-loop", got.Graph)
	assert.Equal(t, hostile, got.Question.Text, "JSON keeps the text as it is; escaping is the receiver's")
	require.Len(t, got.Question.AnswerLinks, 2)
	tok := got.Question.AnswerLinks[1].URL[strings.Index(got.Question.AnswerLinks[1].URL, "?t=")+3:]
	l, err := answerlink.Verify(linkKey, strings.ReplaceAll(tok, "%3D", "="), when)
	require.NoError(t, err)
	assert.Equal(t, answerlink.Link{Run: "r1", Question: "judge-2", Asking: "waiting/judge-2/7", Answer: "revise", Fixed: true, Expires: when.Add(answerlink.DefaultTTL)}, l)
	assert.NotEmpty(t, got.Question.AnswerForm)

	var failed JSONNotice
	require.NoError(t, json.Unmarshal(body(t, s, FormatJSON, notices()[1]), &failed))
	require.NotNil(t, failed.Resumable)
	assert.True(t, *failed.Resumable)
	assert.LessOrEqual(t, len(failed.Error), maxError)
	assert.Nil(t, failed.Question)

	noLinks, err := NewSender([]Endpoint{{Name: "ops", URL: "https://x.example"}}, secret, "", nil, 0)
	require.NoError(t, err)
	var bare JSONNotice
	require.NoError(t, json.Unmarshal(body(t, noLinks, FormatJSON, n), &bare))
	assert.Empty(t, bare.ConsoleURL)
	assert.Empty(t, bare.Question.AnswerLinks, "no console address: no links")

	// A notice of a run of an older build names no asking: no link that
	// could answer the question asked again later, the run's page only.
	n.Question.Asking = ""
	var unnamed JSONNotice
	require.NoError(t, json.Unmarshal(body(t, s, FormatJSON, n), &unnamed))
	assert.Empty(t, unnamed.Question.AnswerLinks)
	assert.Empty(t, unnamed.Question.AnswerForm)
	assert.Equal(t, "https://tether.example.com/console/runs/r1", unnamed.ConsoleURL)
}

func TestSignature(t *testing.T) {
	b := []byte(`{"id":"k"}`)
	h := Sign(secret, b, when)
	require.NoError(t, Verify(secret, b, h, when.Add(time.Minute), DefaultTolerance))
	assert.ErrorIs(t, Verify(secret, []byte(`{"id":"K"}`), h, when, DefaultTolerance), ErrBadSignature, "a changed body")
	assert.ErrorIs(t, Verify([]byte("another secret, quite long"), b, h, when, DefaultTolerance), ErrBadSignature)
	assert.ErrorIs(t, Verify(secret, b, h, when.Add(time.Hour), DefaultTolerance), ErrStale, "a recorded request sent again later")
	assert.ErrorIs(t, Verify(secret, b, "v1=abc", when, DefaultTolerance), ErrNoSignature)
	// A receiver rotating its secret accepts either.
	rotating := h + ",v1=" + strings.Repeat("0", 64)
	require.NoError(t, Verify(secret, b, rotating, when, DefaultTolerance))
}

// Send signs every request and types what the receiver said.
func TestSendTypesTheAnswer(t *testing.T) {
	var (
		mu     sync.Mutex
		status = http.StatusOK
		got    []*http.Request
		bodies [][]byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got, bodies = append(got, r), append(bodies, b)
		if status == http.StatusFound {
			w.Header().Set("Location", "https://elsewhere.example/")
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	s := sender(t, srv.URL+"/hook?token=SECRET-IN-URL", FormatJSON)
	n := waiting()
	for _, tc := range []struct {
		status int
		want   error
	}{{200, nil}, {204, nil}, {500, ErrTransient}, {503, ErrTransient}, {429, ErrTransient}, {408, ErrTransient}, {400, ErrRefused}, {404, ErrRefused}, {http.StatusFound, ErrRefused}} {
		mu.Lock()
		status = tc.status
		mu.Unlock()
		err := s.Send(context.Background(), n)
		if tc.want == nil {
			assert.NoError(t, err, "%d", tc.status)
		} else {
			assert.ErrorIs(t, err, tc.want, "%d", tc.status)
			assert.NotContains(t, err.Error(), "SECRET-IN-URL", "an error never holds the endpoint's URL")
		}
	}
	mu.Lock()
	r, b := got[0], bodies[0]
	mu.Unlock()
	require.NoError(t, Verify(secret, b, r.Header.Get(SignatureHeader), when.Add(time.Minute), DefaultTolerance))
	assert.Equal(t, n.Key, r.Header.Get(IdempotencyHeader))
	assert.Equal(t, "waiting", r.Header.Get(EventHeader))
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))

	// Nobody listening: a failure that may pass.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	err = sender(t, "http://"+addr+"/hook", FormatJSON).Send(context.Background(), n)
	assert.ErrorIs(t, err, ErrTransient)
	err = s.Send(context.Background(), Notice{Endpoint: "pager", Event: "waiting", Run: "r1"})
	assert.ErrorIs(t, err, ErrUnknownEndpoint)
}

func TestParseEndpoints(t *testing.T) {
	eps, err := ParseEndpoints("ops=slack+https://hooks.slack.com/services/T/B/X, audit=https://audit.example/hook")
	require.NoError(t, err)
	assert.Equal(t, []Endpoint{
		{Name: "ops", URL: "https://hooks.slack.com/services/T/B/X", Format: FormatSlack},
		{Name: "audit", URL: "https://audit.example/hook", Format: FormatJSON},
	}, eps)

	inline, err := ParseEndpoints(`{endpoints: [{name: teams, url: "https://x.webhook.office.com/a", format: teams, events: [waiting, failed]}]}`)
	require.NoError(t, err)
	assert.Equal(t, []string{"waiting", "failed"}, inline[0].Events)
	assert.True(t, inline[0].Wants("failed"))
	assert.False(t, inline[0].Wants("completed"))

	file := filepath.Join(t.TempDir(), "notify.yaml")
	require.NoError(t, os.WriteFile(file, []byte("endpoints:\n  - name: local\n    url: http://127.0.0.1:9000/hook\n  - name: lan\n    url: http://receiver:8080/\n    insecure: true\n"), 0o600))
	fromFile, err := ParseEndpoints(file)
	require.NoError(t, err)
	assert.Len(t, fromFile, 2)

	for value, want := range map[string]string{
		"https://hooks.slack.com/services/T/B/SECRET":                        "has no name",
		"ops=http://receiver.example/hook":                                   "use https",
		"ops=https://a.example/1 ops=https://b.example/2":                    "named \"ops\"",
		"ops=fax+https://a.example/1":                                        "not an http(s) URL",
		`{endpoints: [{name: x, url: "https://a.example", format: pager}]}`:  "format \"pager\"",
		`{endpoints: [{name: x, url: "https://a.example", events: [done]}]}`: "event \"done\"",
		`{endpoints: [{name: x, url: "https://a.example", colour: red}]}`:    "colour",
		"/no/such/file.yaml":                                                 "no such file",
		"bad name=https://a.example":                                         "bad",
	} {
		_, err := ParseEndpoints(value)
		require.Error(t, err, value)
		assert.Contains(t, err.Error(), want, value)
		assert.NotContains(t, err.Error(), "SECRET", "an error never holds a webhook's secret path")
	}
	_, err = NewSender(eps, []byte("short"), "", nil, 0)
	assert.ErrorContains(t, err, SecretEnv)
	_, err = NewSender(eps, secret, "tether.example.com", nil, 0)
	assert.ErrorContains(t, err, ConsoleURLEnv)
}

func TestKeyIsPerQuestionAndEndpoint(t *testing.T) {
	k := Key("r1", "waiting/judge-2/7", "ops")
	assert.Len(t, k, 32)
	assert.Equal(t, k, Key("r1", "waiting/judge-2/7", "ops"))
	for _, other := range []string{Key("r2", "waiting/judge-2/7", "ops"), Key("r1", "waiting/judge-3/7", "ops"), Key("r1", "waiting/judge-2/7", "audit")} {
		assert.NotEqual(t, k, other)
	}
	assert.False(t, errors.Is(nil, ErrTransient))
}

func TestGitHubFormat(t *testing.T) {
	eps, err := ParseEndpoints("gh=github, ops=https://hooks.example.com/x")
	require.NoError(t, err)
	require.Len(t, eps, 2)
	assert.Equal(t, Endpoint{Name: "gh", Format: FormatGitHub}, eps[0])
	_, err = ParseEndpoints(`{endpoints: [{name: gh, format: github, url: "https://example.com"}]}`)
	assert.ErrorContains(t, err, "has no url")

	n := Notice{Endpoint: "gh", Key: "k", Event: graph.NotifyWaiting, Run: "r1", Graph: "fix", Node: "review",
		Question: &Question{ID: "review-1", Text: "Review it @everyone\n[click](https://evil.example) <img src=x>", Options: []string{"approved"}}}
	body, err := Body(FormatGitHub, n, Links{Console: "https://tether.example.com/runs/r1"})
	require.NoError(t, err)
	s := string(body)
	assert.Contains(t, s, "`/tether answer review-1 TEXT`")
	assert.Contains(t, s, "[The run on the console](https://tether.example.com/runs/r1)")
	assert.NotContains(t, s, "@everyone", "no mention of its own")
	assert.NotContains(t, s, "[click](", "no link of its own")
	assert.NotContains(t, s, "<img", "no HTML of its own")
}

package webhook

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/github/githubtest"
	"github.com/tether-run/tether/internal/github/triggers"
)

// starter records the workflows a handler starts, and refuses a second
// start of one id as Temporal does.
type starter struct {
	mu      sync.Mutex
	started map[string]*github.Plan
	down    bool
}

func (s *starter) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, errors.New("connection refused")
	}
	if _, ok := s.started[o.ID]; ok {
		return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "")
	}
	if wf != github.WorkflowType || !o.WorkflowExecutionErrorWhenAlreadyStarted {
		return nil, errors.New("not the delivery workflow")
	}
	s.started[o.ID] = args[0].(*github.Plan)
	return nil, nil
}

const secret = "0123456789abcdef-secret"

func setup(t *testing.T) (*httptest.Server, *githubtest.Server, *starter, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644))
	gh := githubtest.New(t, "acme/widgets", dir, "ghs_")
	tr, err := triggers.Load(filepath.Join("..", "triggers", "testdata", "triggers.yaml"))
	require.NoError(t, err)
	st := &starter{started: map[string]*github.Plan{}}
	var logs bytes.Buffer
	h, err := New([]byte(secret), tr, st, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, gh, st, &logs
}

func TestWebhook(t *testing.T) {
	srv, gh, st, logs := setup(t)
	n := gh.OpenIssue("Broken", "It breaks.", "alice")

	d := gh.Labeled(n, "tether", "alice")
	sent := githubtest.Deliver(t, srv.URL, secret, d)
	assert.Equal(t, 202, sent.Status, sent.Body)
	p := st.started[github.DeliveryWorkflowID(d.ID)]
	require.NotNil(t, p)
	assert.Equal(t, github.PlanStart, p.Kind)
	assert.Equal(t, github.RunID("acme/widgets", n, d.ID), p.Start.RunID)
	assert.Equal(t, "main", p.Start.Ref)
	assert.EqualValues(t, 3, p.Start.Inputs["budget"])
	assert.Contains(t, sent.Body, p.Start.RunID)

	again := githubtest.Deliver(t, srv.URL, secret, d)
	assert.Equal(t, 202, again.Status)
	assert.Contains(t, again.Body, "handled already")
	assert.Len(t, st.started, 1, "a redelivery starts nothing")

	forged := githubtest.Deliver(t, srv.URL, "another secret entirely", gh.Labeled(n, "tether", "mallory"))
	assert.Equal(t, 401, forged.Status)
	unsigned := githubtest.DeliverSigned(t, srv.URL, "", gh.Labeled(n, "tether", "mallory"))
	assert.Equal(t, 401, unsigned.Status)
	sha1 := githubtest.DeliverSigned(t, srv.URL, "sha1=0000", gh.Labeled(n, "tether", "mallory"))
	assert.Equal(t, 401, sha1.Status, "only X-Hub-Signature-256 counts")
	assert.Len(t, st.started, 1)
	assert.Equal(t, 3, strings.Count(logs.String(), "signature does not match"), "each refusal is logged")
	assert.NotContains(t, logs.String(), secret)

	ping := githubtest.Deliver(t, srv.URL, secret, githubtest.Delivery{ID: githubtest.NewDeliveryID(), Event: "ping", Payload: []byte(`{"zen":"Keep it logically awesome."}`)})
	assert.Equal(t, 200, ping.Status)

	// A stranger's command: one reply, nothing else.
	d = gh.Commented(n, "mallory", "NONE", "/tether run fix")
	githubtest.Deliver(t, srv.URL, secret, d)
	p = st.started[github.DeliveryWorkflowID(d.ID)]
	require.NotNil(t, p)
	assert.Equal(t, github.PlanRefuse, p.Kind)
	assert.Contains(t, p.Reply, "@mallory")
	assert.Contains(t, p.Reply, "NONE")

	// A collaborator's commands.
	for body, kind := range map[string]string{"/tether answer review-1 approved": github.PlanAnswer, "/tether guide writer smaller": github.PlanGuide,
		"/tether cancel": github.PlanCancel, "/tether run fix budget=2": github.PlanStart, "/tether run nope": github.PlanRefuse, "/tether dance": github.PlanRefuse} {
		d := gh.Commented(n, "bob", "COLLABORATOR", body)
		githubtest.Deliver(t, srv.URL, secret, d)
		p := st.started[github.DeliveryWorkflowID(d.ID)]
		require.NotNil(t, p, body)
		assert.Equal(t, kind, p.Kind, body)
	}
	// Comments that are no command, and a bot's, start nothing.
	before := len(st.started)
	for _, body := range []string{"thanks!", "<!-- tether:run:x -->\n/tether cancel"} {
		githubtest.Deliver(t, srv.URL, secret, gh.Commented(n, "bob", "COLLABORATOR", body))
	}
	githubtest.Deliver(t, srv.URL, secret, gh.Commented(n, "tether[bot]", "NONE", "/tether cancel"))
	assert.Len(t, st.started, before)

	st.down = true
	down := githubtest.Deliver(t, srv.URL, secret, gh.Labeled(n, "tether", "alice"))
	assert.Equal(t, 503, down.Status, "GitHub may redeliver it")
}

func TestNewRefuses(t *testing.T) {
	_, err := New([]byte("short"), &triggers.Triggers{}, &starter{}, nil)
	assert.ErrorContains(t, err, SecretEnv)
	_, err = New([]byte(secret), nil, &starter{}, nil)
	assert.ErrorContains(t, err, triggers.Env)
}

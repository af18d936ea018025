package soak

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/notify"
	"github.com/tether-run/tether/internal/notify/notifytest"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// TestTallyCountsNoticesAgainstQuestions: the soak's counts, over notices
// sent by the workers' own sender to the soak's receiver: a notice sent
// again under its key counts once, a question with two keys is notified
// twice, one with none is unnotified, and another soak's runs are not
// counted.
func TestTallyCountsNoticesAgainstQuestions(t *testing.T) {
	secret := []byte("soak-test-secret-0123456789")
	rcv, err := notifytest.Start(secret)
	require.NoError(t, err)
	t.Cleanup(rcv.Close)
	sender, err := notify.NewSender([]notify.Endpoint{{Name: noticeEndpoint, URL: rcv.URL()}}, secret, "", nil, 0)
	require.NoError(t, err)
	s := &Soak{prefix: "soak-abc", receiver: rcv}

	when := time.Now()
	send := func(run, event, key string, q *notify.Question) {
		t.Helper()
		n := notify.Notice{Endpoint: noticeEndpoint, Key: notify.Key(run, key, noticeEndpoint), Event: event, Run: run, Graph: "soak-persist", Question: q, Time: when}
		require.NoError(t, sender.Send(context.Background(), n))
	}
	ask := &notify.Question{ID: "ask-1", Text: "Go on?"}
	send("soak-abc-0", graph.NotifyWaiting, "waiting/ask-1/4", ask)
	send("soak-abc-0", graph.NotifyWaiting, "waiting/ask-1/4", ask) // sent again after a lost worker
	send("soak-abc-1", graph.NotifyWaiting, "waiting/ask-1/4", ask)
	send("soak-abc-1", graph.NotifyWaiting, "waiting/ask-1/9", ask) // a second notice of one question
	send("soak-abc-0", graph.NotifyCompleted, "completed/20", nil)
	send("soak-other-0", graph.NotifyWaiting, "waiting/ask-1/4", ask)

	done := &runapi.GraphRunResult{Status: runstore.StatusCompleted}
	runs := []*run{
		{id: "soak-abc-0", kind: "persist", asked: true, result: done},
		{id: "soak-abc-1", kind: "persist", asked: true, result: done},
		{id: "soak-abc-2", kind: "persist", asked: true, result: done},
		{id: "soak-abc-3", kind: "tool", result: done},
	}
	n := s.tally(asked(runs), 4)
	assert.Equal(t, 3, n.Questions)
	assert.Equal(t, 1, n.Notified)
	assert.Equal(t, []string{"soak-abc-2/ask-1"}, n.Unnotified)
	assert.Equal(t, []string{"soak-abc-1/ask-1 (2 notices)"}, n.Twice)
	assert.Equal(t, 1, n.EndNotices)
	assert.Equal(t, 5, n.Requests)
	assert.Equal(t, 1, n.Repeats)
	assert.Zero(t, n.BadSignatures)
	assert.Equal(t, map[string]int{"waiting": 3, "completed": 1}, n.ByEvent)
	assert.Len(t, n.problems(), 3, "unnotified, notified twice, and 4 completed runs against 1 completion notice")

	// Signed with another secret: counted as bad.
	other, err := notify.NewSender([]notify.Endpoint{{Name: noticeEndpoint, URL: rcv.URL()}}, []byte("another-secret-0123456789"), "", nil, 0)
	require.NoError(t, err)
	err = other.Send(context.Background(), notify.Notice{Endpoint: noticeEndpoint, Key: notify.Key("soak-abc-2", "waiting/ask-1/4", noticeEndpoint), Event: graph.NotifyWaiting, Run: "soak-abc-2", Question: ask, Time: time.Now()})
	require.ErrorIs(t, err, notify.ErrRefused)
	n = s.tally(asked(runs), 4)
	assert.Equal(t, 1, n.BadSignatures)
}

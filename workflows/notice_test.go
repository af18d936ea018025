package workflows

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/notify"
)

// noticeRecorder stands in for the Notify activity: it records each
// notice sent, per idempotency key.
type noticeRecorder struct {
	mu   sync.Mutex
	sent []notify.Notice
}

func (n *noticeRecorder) Notify(_ context.Context, x *notify.Notice) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, *x)
	return nil
}

func (n *noticeRecorder) events(endpoint string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, x := range n.sent {
		if x.Endpoint == endpoint {
			out = append(out, x.Event)
		}
	}
	return out
}

func (s *GraphRunSuite) withNotices(endpoints ...notify.Endpoint) *noticeRecorder {
	sender, err := notify.NewSender(endpoints, []byte("0123456789abcdef0123"), "", nil, 0)
	s.Require().NoError(err)
	s.acts.Notifier = sender
	rec := &noticeRecorder{}
	s.env.RegisterWorkflowWithOptions(Notice, workflow.RegisterOptions{Name: NoticeWorkflowType})
	s.env.OnActivity("Notify", mock.Anything, mock.Anything).Return(rec.Notify)
	return rec
}

// A question is noticed once per endpoint that wants it, the end once;
// the graph's routes and each endpoint's own filter decide where.
func (s *GraphRunSuite) TestNoticesPerQuestionAndEnd() {
	rec := s.withNotices(
		notify.Endpoint{Name: "ops", URL: "https://ops.example/hook"},
		notify.Endpoint{Name: "audit", URL: "https://audit.example/hook", Events: []string{"completed"}},
		notify.Endpoint{Name: "quiet", URL: "https://quiet.example/hook"},
	)
	src := strings.Replace(humanGraph, "nodes:", "notify:\n  - {to: [ops, audit]}\nnodes:", 1)
	src = strings.Replace(src, `question: "Publish {{.input.title}}?"}`, `question: "Publish {{.input.title}}?", options: [yes, no]}`, 1)
	s.env.RegisterDelayedCallback(func() {
		st := s.queryState()
		s.Require().Len(st.Questions, 1)
		s.Equal([]string{"yes", "no"}, st.Questions[0].Options)
		p := s.latest().Pause
		s.Require().NotNil(p)
		s.Equal("waiting/ask-1/0", p.Questions[0].Notice, "the pause checkpoint records the notice sent")
		s.env.SignalWorkflow(SignalAnswer, Answer{QuestionID: "ask-1", Text: "yes"})
	}, time.Hour)
	_, err := s.run(src, map[string]any{"title": "Otters"})
	s.Require().NoError(err)
	s.Equal([]string{"waiting", "completed"}, rec.events("ops"))
	s.Equal([]string{"completed"}, rec.events("audit"), "audit's own filter")
	s.Empty(rec.events("quiet"), "the graph's routes leave quiet out")
	var q notify.Notice
	for _, x := range rec.sent {
		if x.Endpoint == "ops" && x.Event == "waiting" {
			q = x
		}
	}
	s.Require().NotNil(q.Question)
	s.Equal("Publish Otters?", q.Question.Text)
	s.Equal([]string{"yes", "no"}, q.Question.Options)
	s.Equal(notify.Key("run-1", "waiting/ask-1/0", "ops"), q.Key)
	s.Equal("approve", q.Graph)
}

// Without endpoints, and with notify: [], a run sends nothing.
func (s *GraphRunSuite) TestNoNoticesWhenOff() {
	rec := s.withNotices(notify.Endpoint{Name: "ops", URL: "https://ops.example/hook"})
	src := strings.Replace(humanGraph, "nodes:", "notify: []\nnodes:", 1)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(SignalAnswer, Answer{QuestionID: "ask-1", Text: "yes"})
	}, time.Hour)
	_, err := s.run(src, map[string]any{"title": "x"})
	s.Require().NoError(err)
	s.Empty(rec.sent)
}

// A failed run says so, once, with its error.
func (s *GraphRunSuite) TestNoticeOfFailure() {
	rec := s.withNotices(notify.Endpoint{Name: "ops", URL: "https://ops.example/hook"})
	_, err := s.run(`
name: fails
start: w
nodes:
  - {id: w, kind: agent, backend: scripted, prompt: FAIL}
  - {id: done, kind: end}
edges:
  - {from: w, to: done}
`, nil)
	s.Require().Error(err)
	s.Require().Len(rec.sent, 1)
	s.Equal("failed", rec.sent[0].Event)
	s.Equal("failed", rec.sent[0].Status)
	s.Contains(rec.sent[0].Error, "asked to fail")
}

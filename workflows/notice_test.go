package workflows

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/internal/notify"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
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
	s.env.RegisterWorkflowWithOptions(Notice, workflow.RegisterOptions{Name: runapi.NoticeWorkflowType})
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
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "yes"})
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
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "yes"})
	}, time.Hour)
	_, err := s.run(src, map[string]any{"title": "x"})
	s.Require().NoError(err)
	s.Empty(rec.sent)
}

// A failed run says so, once, with its error.
func (s *GraphRunSuite) TestNoticeOfFailure() {
	rec := s.withNotices(notify.Endpoint{Name: "ops", URL: "https://ops.example/hook"})
	_, err := s.run(graphYAML("fails-notice"), nil)
	s.Require().Error(err)
	s.Require().Len(rec.sent, 1)
	s.Equal("failed", rec.sent[0].Event)
	s.Equal("failed", rec.sent[0].Status)
	s.Contains(rec.sent[0].Error, "asked to fail")
}

// waitingCheckpoint runs humanGraph with notices until it waits for
// ask-1, answers it, and returns the checkpoint taken while it waited.
func (s *GraphRunSuite) waitingCheckpoint() *runstore.Checkpoint {
	s.withNotices(notify.Endpoint{Name: "ops", URL: "https://ops.example/hook"})
	var waiting *runstore.Checkpoint
	s.env.RegisterDelayedCallback(func() {
		waiting = s.latest()
		s.Equal("waiting/ask-1/0", s.queryState().Questions[0].Asking, "the state names the asking")
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "yes"})
	}, time.Hour)
	_, err := s.run(humanGraph, map[string]any{"title": "Otters"})
	s.Require().NoError(err)
	s.Require().NotNil(waiting.Pause)
	return waiting
}

// restart runs GraphRun again from cp (as rewind and resume do) with
// notices, and returns the asking of ask-1 it waits for and the notices
// it sent.
func (s *GraphRunSuite) restart(cp *runstore.Checkpoint, before bool) (string, *noticeRecorder) {
	s.SetupTest()
	rec := s.withNotices(notify.Endpoint{Name: "ops", URL: "https://ops.example/hook"})
	if before {
		s.recordedBefore(changeRewoundQuestions, versionRewoundQuestions)
	}
	var asking string
	s.env.RegisterDelayedCallback(func() {
		asking = s.queryState().Questions[0].Asking
		s.env.SignalWorkflow(runapi.SignalAnswer, runapi.Answer{QuestionID: "ask-1", Text: "no"})
	}, time.Hour)
	s.env.ExecuteWorkflow(GraphRun, &runapi.GraphRunInput{RunID: "run-1", Checkpoint: cp})
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	return asking, rec
}

// A run rewound to a checkpoint taken while it waited asks the question
// again (changeRewoundQuestions): a new notice, whose asking its answer
// links name, so the links sent before the rewind answer nothing. A run
// resumed from the same checkpoint (not rewound) waits for the same
// asking and sends nothing again; a run recorded before the change kept
// the earlier notice.
func (s *GraphRunSuite) TestRewoundQuestionsAreAskedAgain() {
	waiting := s.waitingCheckpoint()
	rewound := *waiting
	rewound.Seq = 3
	rewound.Lineage = &runstore.Lineage{Run: "run-1", Seq: waiting.Seq, Kind: "rewind", At: 3}

	asking, rec := s.restart(&rewound, false)
	s.Equal("waiting/ask-1/3", asking)
	s.Equal([]string{"waiting", "completed"}, rec.events("ops"))
	s.Require().NotNil(rec.sent[0].Question)
	s.Equal("waiting/ask-1/3", rec.sent[0].Question.Asking, "the notice's links name the new asking")
	s.Equal(notify.Key("run-1", "waiting/ask-1/3", "ops"), rec.sent[0].Key)

	asking, rec = s.restart(waiting, false)
	s.Equal("waiting/ask-1/0", asking, "a resume waits for the same asking")
	s.Equal([]string{"completed"}, rec.events("ops"), "and tells no one again")

	asking, rec = s.restart(&rewound, true)
	s.Equal("waiting/ask-1/0", asking, "before the change")
	s.Equal([]string{"completed"}, rec.events("ops"))
}

package console

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/tether-run/tether/internal/blobref"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runlist"
	"github.com/tether-run/tether/internal/runstore"
)

// answered is an answer a run took: from Temporal's history, which records
// who sent it (the client's identity) and when.
type answered struct {
	Question string
	Node     string
	Text     string
	By       string
	At       time.Time
	Signal   bool
	// Queued says no worker has taken it yet (the run page's question
	// still waits for it).
	Queued bool
}

// maxHistoryEvents bounds how much of a run's history the run page reads
// for its answers; a run that continues as new keeps its histories short.
const maxHistoryEvents = 20000

// answers reads the answers the run's current execution accepted; at,
// when Temporal described the execution, names it and its history's
// length (History), and a page asked again before the history grew reads
// nothing: a long loop's history is thousands of events.
func (s *Server) answers(ctx context.Context, run string, at *History) []answered {
	if s.opts.Temporal == nil {
		return nil
	}
	key, execution := "", ""
	if at != nil && at.RunID != "" {
		key, execution = fmt.Sprintf("%s/%s/%d", run, at.RunID, at.Events), at.RunID
		// A history only grows: the same length is the same answers.
		if out, ok := s.caches.answered.get(key); ok {
			return out
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	it := s.opts.Temporal.GetWorkflowHistory(ctx, run, execution, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	dc := converter.GetDefaultDataConverter()
	var out []answered
	whole := true
	for n := 0; it.HasNext() && n < maxHistoryEvents; n++ {
		ev, err := it.Next()
		if err != nil {
			whole = false
			break
		}
		if at != nil && ev.GetEventId() > at.Events {
			break // what came after the page's description
		}
		var (
			a      runapi.Answer
			by     string
			signal bool
		)
		switch {
		case ev.GetWorkflowExecutionSignaledEventAttributes() != nil:
			at := ev.GetWorkflowExecutionSignaledEventAttributes()
			if at.GetSignalName() != runapi.SignalAnswer || len(at.GetInput().GetPayloads()) == 0 {
				continue
			}
			if dc.FromPayload(at.GetInput().GetPayloads()[0], &a) != nil {
				continue
			}
			by, signal = at.GetIdentity(), true
		case ev.GetWorkflowExecutionUpdateAcceptedEventAttributes() != nil:
			req := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest()
			if req.GetInput().GetName() != runapi.UpdateAnswer || len(req.GetInput().GetArgs().GetPayloads()) == 0 {
				continue
			}
			if dc.FromPayload(req.GetInput().GetArgs().GetPayloads()[0], &a) != nil {
				continue
			}
			by = req.GetMeta().GetIdentity()
		default:
			continue
		}
		node := a.QuestionID
		if i := strings.LastIndexByte(node, '-'); i > 0 {
			node = node[:i]
		}
		out = append(out, answered{Question: a.QuestionID, Node: node, Text: a.Text, By: by, At: ev.GetEventTime().AsTime(), Signal: signal})
	}
	// Newest first, as the page lists everything.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if key != "" && whole {
		s.caches.answered.put(key, out)
	}
	return out
}

// pendingRun is a waiting run and its questions.
type pendingRun struct {
	Run       string
	Graph     string
	Questions []runapi.PendingQuestion
	Since     time.Time
	Err       string
}

type questionsView struct {
	Runs  []pendingRun
	Total int
	// Down is what is down (no worker polls), for the page's status.
	Down string
}

// questionsPage lists every pending question of every waiting run, each
// with its answer form.
func (s *Server) questionsPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	rep := s.opts.Actions.Health(ctx, "")
	if rep.Temporal != nil {
		return temporalDown(rep)
	}
	waiting, err := runlist.List(ctx, s.opts.Temporal, runlist.Filter{Status: runstore.StatusWaiting}, nil, runsPerPage)
	if err != nil {
		return &downError{"Temporal's visibility did not list the waiting runs: " + err.Error()}
	}
	if !rep.Down() && len(waiting.Rows) > 0 {
		// A waiting run's query proves a worker there; none answering, no
		// run is asked again below.
		rep = s.opts.Actions.Health(ctx, waiting.Rows[0].ID)
	}
	v := questionsView{Runs: make([]pendingRun, len(waiting.Rows)), Down: rep.String()}
	var wg sync.WaitGroup
	for i, row := range waiting.Rows {
		v.Runs[i] = pendingRun{Run: row.ID, Graph: row.Graph, Since: row.Started}
		wg.Add(1)
		go func(pr *pendingRun) {
			defer wg.Done()
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			rs, err := s.opts.Actions.State(qctx, pr.Run)
			if err != nil {
				pr.Err = blobref.Hide(err.Error())
				return
			}
			pr.Questions = rs.State.Questions
		}(&v.Runs[i])
	}
	wg.Wait()
	for _, pr := range v.Runs {
		v.Total += len(pr.Questions)
	}
	return s.render(w, r, http.StatusOK, "questions", page{Title: "Questions", Nav: "questions", Live: "/runs/events", Data: v})
}

// answerWait bounds how long a page waits for a run to take an answer:
// a worker that polls takes it in well under a second.
const answerWait = 10 * time.Second

// answer sends a question's answer through the same update `tether answer`
// uses; the run's refusal (unknown, already answered) comes back on the
// page as it is. When no worker polls, the update could not be taken, so
// the answer goes as the signal, which Temporal keeps in the run's
// history until a worker takes it, and the page says so: either way the
// page comes back within a second.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) error {
	run := r.PathValue("run")
	if err := runstore.ValidateRunID(run); err != nil {
		return notFound("No such run", err)
	}
	qid, text := r.PostFormValue("question"), r.PostFormValue("text")
	back := backURL(r.PostFormValue("back"), run)
	ctx := r.Context()
	rep := s.opts.Actions.Health(ctx, run)
	var f flash
	switch {
	case rep.Temporal != nil:
		f = flash{Kind: "refused", Text: "Your answer was not sent: " + rep.String() + "."}
	case rep.Down() && strings.TrimSpace(text) == "":
		f = flash{Kind: "refused", Text: fmt.Sprintf("Your answer to %s is empty, and it cannot be queued: %s, so the run cannot say whether the question takes an empty answer.", qid, rep.String())}
	case rep.Down():
		if err := s.opts.Actions.QueueAnswer(ctx, run, qid, text, s.identity(r)); err != nil {
			f = flash{Kind: "refused", Text: err.Error()}
			break
		}
		f = flash{Kind: "queued", Text: fmt.Sprintf("Your answer to %s is queued, not yet taken: %s. Temporal keeps it in run %s's history and the run takes it when a worker starts; if %s is answered before, the run ignores this answer.", qid, rep.String(), run, qid)}
	default:
		actx, cancel := context.WithTimeout(ctx, answerWait)
		defer cancel()
		err := s.opts.Actions.Answer(actx, run, qid, text, s.identity(r))
		switch {
		case err == nil:
			f = flash{Kind: "ok", Text: "Your answer to " + qid + " was accepted by run " + run + "."}
		case actx.Err() != nil:
			f = flash{Kind: "refused", Text: fmt.Sprintf("Run %s did not take your answer to %s within %s: no worker answered it. The answer may still be taken when one does; reload the run's page to see.", run, qid, dur(answerWait))}
		default:
			f = flash{Kind: "refused", Text: err.Error()}
		}
	}
	s.redirectFlash(w, r, back, f)
	return nil
}

// guide sends a note to a node's next visit.
func (s *Server) guide(w http.ResponseWriter, r *http.Request) error {
	run := r.PathValue("run")
	if err := runstore.ValidateRunID(run); err != nil {
		return notFound("No such run", err)
	}
	msg, err := s.opts.Actions.Guide(r.Context(), run, r.PostFormValue("node"), r.PostFormValue("text"), s.identity(r))
	f := flash{Kind: "ok", Text: msg}
	if err != nil {
		f = flash{Kind: "refused", Text: err.Error()}
	}
	s.redirectFlash(w, r, backURL("run", run), f)
	return nil
}

// backURL is the page an answer leads back to: the questions page it
// came from, else the run's.
func backURL(back, run string) string {
	if back == "questions" {
		return "/questions"
	}
	return runLink(run)
}

// identity names who acts through the console, for Temporal's history:
// the name given at login, else the user the console runs as.
func (s *Server) identity(r *http.Request) string {
	if c, err := r.Cookie(nameCookie); err == nil && cleanName(c.Value) != "" {
		return cleanName(c.Value) + " (tether console)"
	}
	return s.user + " (tether console)"
}

// hostUser is user@host of the process: who acts for a person who gave
// no name.
func hostUser() string {
	name := "console"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		name += "@" + h
	}
	return name
}

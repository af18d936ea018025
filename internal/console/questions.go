package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/tether-run/tether/internal/runapi"
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
}

// maxHistoryEvents bounds how much of a run's history the run page reads
// for its answers; a run that continues as new keeps its histories short.
const maxHistoryEvents = 20000

// answeredMemo keeps the answers read from an execution's history at one
// length: a history only grows, so the same length is the same answers.
var answeredMemo = newMemo[[]answered](256)

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
		if out, ok := answeredMemo.get(key); ok {
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
		answeredMemo.put(key, out)
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
	Err   string
}

// questionsPage lists every pending question of every waiting run, each
// with its answer form.
func (s *Server) questionsPage(w http.ResponseWriter, r *http.Request) {
	v := questionsView{}
	rows, _, err := s.visibility(r.Context(), runFilter{Status: runstore.StatusWaiting}, nil)
	if err != nil {
		v.Err = "Temporal's visibility could not list the waiting runs: " + err.Error()
	}
	v.Runs = make([]pendingRun, len(rows))
	var wg sync.WaitGroup
	for i, row := range rows {
		v.Runs[i] = pendingRun{Run: row.ID, Graph: row.Graph, Since: row.Started}
		wg.Add(1)
		go func(pr *pendingRun) {
			defer wg.Done()
			qctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			defer cancel()
			rs, err := s.opts.Actions.State(qctx, pr.Run)
			if err != nil {
				pr.Err = err.Error()
				return
			}
			pr.Questions = rs.State.Questions
		}(&v.Runs[i])
	}
	wg.Wait()
	for _, pr := range v.Runs {
		v.Total += len(pr.Questions)
	}
	pg := page{Title: "Questions", Nav: "questions", Live: "/runs/events", Data: v}
	pg.Flash, pg.FlashOK = flash(r)
	s.render(w, r, http.StatusOK, "questions", pg)
}

// answer sends a question's answer through the same update `tether answer`
// uses; the run's refusal (unknown, already answered) comes back on the
// page as it is.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	run := r.PathValue("run")
	qid, text := r.PostFormValue("question"), r.PostFormValue("text")
	back := r.PostFormValue("back")
	if back != "questions" {
		back = "run"
	}
	err := s.opts.Actions.Answer(r.Context(), run, qid, text, s.identity(r))
	msg := "Your answer to " + qid + " was accepted by run " + run + "."
	if err != nil {
		msg = err.Error()
	}
	redirectFlash(w, r, backURL(back, run), msg, err == nil)
}

// guide sends a note to a node's next visit.
func (s *Server) guide(w http.ResponseWriter, r *http.Request) {
	run := r.PathValue("run")
	msg, err := s.opts.Actions.Guide(r.Context(), run, r.PostFormValue("node"), r.PostFormValue("text"), s.identity(r))
	if err != nil {
		msg = err.Error()
	}
	redirectFlash(w, r, backURL("run", run), msg, err == nil)
}

func backURL(back, run string) string {
	if back == "questions" {
		return "/questions"
	}
	return "/runs/" + url.PathEscape(run)
}

// identity names who acts through the console, for Temporal's history:
// the name given at login, else the user the console runs as.
func (s *Server) identity(r *http.Request) string {
	if c, err := r.Cookie(nameCookie); err == nil && cleanName(c.Value) != "" {
		return cleanName(c.Value) + " (tether console)"
	}
	return consoleUser() + " (tether console)"
}

var consoleUser = sync.OnceValue(func() string {
	name := "console"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		name += "@" + h
	}
	return name
})

// A flash is the outcome of an action, shown once on the page the action
// leads back to. It travels in the redirect's URL (?ok= or ?refused=), so
// it needs no state; the page escapes it like any text.
func redirectFlash(w http.ResponseWriter, r *http.Request, to, msg string, ok bool) {
	key := "refused"
	if ok {
		key = "ok"
	}
	sep := "?"
	if strings.Contains(to, "?") {
		sep = "&"
	}
	http.Redirect(w, r, to+sep+key+"="+url.QueryEscape(cut(msg, 600)), http.StatusSeeOther)
}

func flash(r *http.Request) (string, bool) {
	q := r.URL.Query()
	if m := q.Get("ok"); m != "" {
		return m, true
	}
	return q.Get("refused"), false
}

package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/answerlink"
	"github.com/tether-run/tether/internal/blobref"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

// One-click answer links (internal/answerlink): a notice about a question
// carries links to /answer/RUN/QUESTION?t=TOKEN. Opening one shows the
// question and asks to confirm; confirming answers through the same update
// as `tether answer`. The link is the credential, so these pages need no
// session (security.open), but their POST carries a CSRF token like every
// form. A link that is forged, changed, expired, for another run or
// question, sent for an earlier asking of its question (the run asked it
// again after a rewind or a resume), made before links named an asking,
// or whose question is no longer waiting is refused with a page that says
// which, and what to do instead.

// answerLinkView is what the answer page shows.
type answerLinkView struct {
	Run      string
	Graph    string
	Question runapi.PendingQuestion
	Token    string
	Fixed    bool
	Answer   string
	Expires  time.Time
	// Refused and Done end the page: Title and Msg say what happened.
	Refused bool
	Done    bool
	Title   string
	Msg     string
}

// linkRefused is a link refused, and why: the answer page says so.
type linkRefused struct {
	status     int
	title, msg string
}

func (e *linkRefused) Error() string { return e.title + ": " + e.msg }

// refuseLink draws the answer page for a refused link.
func (s *Server) refuseLink(w http.ResponseWriter, r *http.Request, v answerLinkView, e *linkRefused) error {
	v.Refused, v.Title, v.Msg = true, e.title, e.msg
	return s.render(w, r, e.status, "answer", page{Title: e.title, Nav: "questions", Data: v})
}

// checkAnswerLink checks the request's link and that its question still
// waits; a refusal is a *linkRefused.
func (s *Server) checkAnswerLink(r *http.Request) (answerLinkView, answerlink.Link, *linkRefused) {
	run, qid := r.PathValue("run"), r.PathValue("question")
	v := answerLinkView{Run: run, Question: runapi.PendingQuestion{ID: qid}, Token: r.FormValue("t")}
	refuse := func(status int, title, msg string) (answerLinkView, answerlink.Link, *linkRefused) {
		return v, answerlink.Link{}, &linkRefused{status, title, msg}
	}
	if len(s.opts.LinkKey) == 0 {
		return refuse(http.StatusServiceUnavailable, "Answer links are off",
			"This console cannot check answer links: it was started without "+answerlink.KeyEnv+". Start it with the same key as the workers', or answer on the run's page.")
	}
	if runstore.ValidateRunID(run) != nil {
		v.Run = ""
		return refuse(http.StatusNotFound, "No such run", "The link names no run this console could show. Open the link from the notice again, exactly as it was sent.")
	}
	l, err := answerlink.Verify(s.opts.LinkKey, v.Token, time.Now())
	switch {
	case errors.Is(err, answerlink.ErrOldLink):
		// Refused, not honoured: such a link names only the run and the
		// question, and the question may have been asked again since (a
		// rewind, a resume), when the link would give the new asking an
		// answer meant for the old one.
		return refuse(http.StatusGone, "This link is from an earlier version of Tether",
			fmt.Sprintf("It was sent before answer links named when their question was asked, so it cannot show that %s waiting now is the question it was sent for: the run may have asked it again since (after a rewind, or a resume), and this link would answer that with an answer meant for the earlier one. Answer on the run's page, or with `tether answer %s %s TEXT`.", qid, run, qid))
	case errors.Is(err, answerlink.ErrExpired):
		return refuse(http.StatusGone, "This link has expired",
			fmt.Sprintf("It was valid until %s. Answer on the run's page, or with `tether answer %s %s TEXT`.", l.Expires.Format(time.RFC1123), run, qid))
	case err != nil:
		return refuse(http.StatusForbidden, "This link is not valid",
			"Its signature does not match: it was changed (or cut short when it was copied), or it was not made by this Tether. Open the link from the notice again, exactly as it was sent, or answer on the run's page.")
	}
	if err := l.For(run, qid); err != nil {
		what := "another run"
		if errors.Is(err, answerlink.ErrOtherQuestion) {
			what = "another question"
		}
		return refuse(http.StatusForbidden, "This link is for "+what, fmt.Sprintf("It answers %s of run %s, not %s of run %s. Open the link from the notice again, exactly as it was sent.", l.Question, l.Run, qid, run))
	}
	v.Fixed, v.Answer, v.Expires = l.Fixed, l.Answer, l.Expires
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if rep := s.opts.Actions.Health(ctx, run); rep.Temporal != nil {
		return refuse(http.StatusServiceUnavailable, "Temporal is unreachable", rep.String()+". Open the link again once it is back.")
	}
	rs, err := s.opts.Actions.State(ctx, run)
	if err != nil {
		return refuse(http.StatusBadGateway, "The run could not be read", blobref.Hide(err.Error()))
	}
	v.Graph = rs.State.Graph
	for _, q := range rs.State.Questions {
		if q.ID != qid {
			continue
		}
		if q.Asking == "" {
			return refuse(http.StatusConflict, "This run does not say when it asked "+qid,
				fmt.Sprintf("A worker of an older build answered for run %s, and its answer does not name when the run asked %s, so this link cannot be checked against it. Try the link again once the workers are upgraded, or answer on the run's page.", run, qid))
		}
		if err := l.Answers(q.Asking); err != nil {
			return refuse(http.StatusConflict, "This question was asked again",
				fmt.Sprintf("This link was sent when run %s asked %s before (%s). The run has asked it again since, after a rewind or a resume that ran its node again (%s), and a link answers only the asking it was sent for: an answer given to the earlier one does not answer this one. Answer it with the link of the newest notice about %s, or on the run's page.", run, qid, l.Asking, q.Asking, qid))
		}
		v.Question = q
		return v, l, nil
	}
	return refuse(http.StatusConflict, "This question is not waiting any more", s.notWaiting(ctx, run, qid, rs))
}

// notWaiting says why a link's question no longer waits: who answered it
// and with what, when the run's history says.
func (s *Server) notWaiting(ctx context.Context, run, qid string, rs *RunState) string {
	for _, a := range s.answers(ctx, run, nil) {
		if a.Question == qid {
			return fmt.Sprintf("%s was answered with %q by %s at %s; a link answers once. The run's page shows where it is now.", qid, a.Text, a.By, a.At.UTC().Format(time.RFC1123))
		}
	}
	return fmt.Sprintf("Run %s (%s) is not waiting for %s: it was answered, or the run moved on. The run's page shows where it is now.", run, rs.State.Status, qid)
}

// answerLinkPage shows the link's question and asks to confirm.
func (s *Server) answerLinkPage(w http.ResponseWriter, r *http.Request) error {
	v, _, refused := s.checkAnswerLink(r)
	if refused != nil {
		return s.refuseLink(w, r, v, refused)
	}
	return s.render(w, r, http.StatusOK, "answer", page{Title: "Answer " + v.Question.ID, Nav: "questions", Data: v})
}

// answerByLink answers the link's question, once confirmed: the link's
// own answer, or for a form link what was typed or picked. The run's
// update is the last word: a question answered meanwhile is refused.
func (s *Server) answerByLink(w http.ResponseWriter, r *http.Request) error {
	v, l, refused := s.checkAnswerLink(r)
	if refused != nil {
		return s.refuseLink(w, r, v, refused)
	}
	text := l.Answer
	if !l.Fixed {
		text = r.PostFormValue("option")
		if text == "" {
			text = strings.TrimSpace(r.PostFormValue("text"))
		}
		if text == "" {
			v.Msg = "Type an answer, or pick one of the options."
			return s.render(w, r, http.StatusBadRequest, "answer", page{Title: "Answer " + v.Question.ID, Nav: "questions", Data: v})
		}
	}
	v.Answer = text
	ctx := r.Context()
	if rep := s.opts.Actions.Health(ctx, v.Run); rep.Down() {
		// No worker takes the update now: the signal waits in history.
		if err := s.opts.Actions.QueueAnswer(ctx, v.Run, v.Question.ID, text, s.linkIdentity(r)); err != nil {
			return s.refuseLink(w, r, v, &linkRefused{http.StatusServiceUnavailable, "The answer was not sent", err.Error()})
		}
		v.Done, v.Title = true, "Queued"
		v.Msg = fmt.Sprintf("Your answer %q to %s is queued, not yet taken: %s. Temporal keeps it in run %s's history and the run takes it when a worker starts.", text, v.Question.ID, rep.String(), v.Run)
		return s.render(w, r, http.StatusAccepted, "answer", page{Title: v.Title, Nav: "questions", Data: v})
	}
	actx, cancel := context.WithTimeout(ctx, answerWait)
	defer cancel()
	if err := s.opts.Actions.Answer(actx, v.Run, v.Question.ID, text, s.linkIdentity(r)); err != nil {
		return s.refuseLink(w, r, v, &linkRefused{http.StatusConflict, "The run refused the answer", err.Error()})
	}
	v.Done, v.Title = true, "Answered"
	v.Msg = fmt.Sprintf("Your answer %q to %s was accepted by run %s.", text, v.Question.ID, v.Run)
	return s.render(w, r, http.StatusOK, "answer", page{Title: v.Title, Nav: "questions", Data: v})
}

// linkIdentity names who answered through a link, for Temporal's
// history: the name given at login on this browser, if any.
func (s *Server) linkIdentity(r *http.Request) string {
	if c, err := r.Cookie(nameCookie); err == nil && cleanName(c.Value) != "" {
		return cleanName(c.Value) + " (answer link, tether console)"
	}
	return "answer link (tether console)"
}

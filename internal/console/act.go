package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tether-run/tether/internal/runstore"
)

// An action changes a run's state. Its GET is a page that says what it
// will do and asks to confirm; its POST does it and shows the result.
type action struct {
	Name string
	// Title and What are the confirmation page's heading and text.
	Title  string
	What   string
	Button string
	// Danger marks an action that cannot be taken back.
	Danger bool
	// Seq is asked for (rewind, fork).
	Seq bool
	do  func(s *Server, ctx context.Context, run string, seq int64) (msg, next string, err error)
}

var actions = map[string]action{
	"cancel": {
		Name: "cancel", Title: "Cancel this run?", Button: "Cancel the run", Danger: true,
		What: "Temporal cancels the run's execution: a visit in flight is stopped, and the run ends canceled. Its checkpoints stay; you can resume it or rewind it later.",
		do: func(s *Server, ctx context.Context, run string, _ int64) (string, string, error) {
			msg, err := s.opts.Actions.Cancel(ctx, run)
			return msg, "", err
		},
	},
	"resume": {
		Name: "resume", Title: "Resume this run?", Button: "Resume the run",
		What: "A new execution of the run continues from the checkpoint it stopped at (a fail-stop's own, else the latest), with its files and conversations. This is `tether resume`.",
		do: func(s *Server, ctx context.Context, run string, _ int64) (string, string, error) {
			msg, err := s.opts.Actions.Resume(ctx, run)
			return msg, "", err
		},
	},
	"rewind": {
		Name: "rewind", Title: "Rewind this run?", Button: "Rewind and run on", Danger: true, Seq: true,
		What: "The run goes back to %s: a new checkpoint, a copy of it, is written; the session blobs only later checkpoints named are deleted; then a new execution runs on from there, with the files and conversations that checkpoint names. This is `tether rewind --to`.",
		do: func(s *Server, ctx context.Context, run string, seq int64) (string, string, error) {
			msg, err := s.opts.Actions.Rewind(ctx, run, seq)
			return msg, "", err
		},
	},
	"fork": {
		Name: "fork", Title: "Fork this run?", Button: "Start the fork", Seq: true,
		What: "A new run starts from %s of this one, with a copy of its files; its persist nodes start conversations of their own. This run is not changed. This is `tether fork --at`.",
		do: func(s *Server, ctx context.Context, run string, seq int64) (string, string, error) {
			id, msg, err := s.opts.Actions.Fork(ctx, run, seq)
			return msg, id, err
		},
	},
	"delete": {
		Name: "delete", Title: "Delete this run?", Button: "Delete it for good", Danger: true,
		What: "Every checkpoint, session blob and workspace pack of the run is deleted from the store. This cannot be undone. This is `tether delete`.",
		do: func(s *Server, ctx context.Context, run string, _ int64) (string, string, error) {
			msg, err := s.opts.Actions.Delete(ctx, run)
			return msg, "", err
		},
	},
}

type confirmView struct {
	Run    string
	Action action
	What   string
	Seq    int64
	Done   bool
	OK     bool
	Msg    string
	// Next is the run the result leads to (a fork's new run).
	Next string
}

// actionOf reads the action a request asks for, its run, and the
// checkpoint it names (rewind, fork).
func actionOf(r *http.Request) (action, string, int64, error) {
	run := r.PathValue("run")
	a, ok := actions[r.PathValue("action")]
	if !ok || runstore.ValidateRunID(run) != nil {
		return a, "", 0, notFound("No such action", fmt.Errorf("there is no action %q; the run page lists what can be done", r.PathValue("action")))
	}
	var seq int64
	if a.Seq {
		raw := r.FormValue("seq")
		n, err := strconv.ParseInt(raw, 10, 64)
		if (err != nil || n < 1) && !(a.Name == "fork" && raw == "") {
			return a, "", 0, badRequest(a.Title, fmt.Errorf("checkpoint %q is not a checkpoint number; pick one from the run's list of checkpoints", raw))
		}
		seq = n
	}
	return a, run, seq, nil
}

func (s *Server) confirmPage(w http.ResponseWriter, r *http.Request) error {
	a, run, seq, err := actionOf(r)
	if err != nil {
		return err
	}
	v := confirmView{Run: run, Action: a, Seq: seq, What: a.What}
	if a.Seq {
		at := "its latest checkpoint"
		if seq > 0 {
			at = fmt.Sprintf("checkpoint %d", seq)
		}
		v.What = fmt.Sprintf(a.What, at)
	}
	return s.render(w, r, http.StatusOK, "confirm", page{Title: a.Title, Nav: "runs", Data: v})
}

func (s *Server) act(w http.ResponseWriter, r *http.Request) error {
	a, run, seq, err := actionOf(r)
	if err != nil {
		return err
	}
	msg, next, err := a.do(s, r.Context(), run, seq)
	v := confirmView{Run: run, Action: a, Seq: seq, Done: true, OK: err == nil, Msg: msg, Next: next}
	status := http.StatusOK
	if err != nil {
		v.Msg = err.Error()
		status = http.StatusConflict
	}
	return s.render(w, r, status, "confirm", page{Title: a.Title, Nav: "runs", Data: v})
}

// runLink is a run page's address.
func runLink(run string) string { return "/runs/" + url.PathEscape(run) }

package workflows

import (
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blobref"
)

// lostFacts is what the next activity of a visit is told about the one
// that just failed with err (changeRetryNote): what its last heartbeat
// said it had done, on top of what was lost before it. A heartbeat
// timeout carries the last heartbeat's details; a failure that may pass,
// and a worker that stopped, carry them in the error (activities'
// withProgress). With refFree (changeRefFreeNotes), a blob key the
// failure's message quotes is hidden before the message is cut, so that
// no part of it reaches the note.
func lostFacts(err error, before *agent.Interruption, refFree bool) *agent.Interruption {
	message := func(s string) string {
		if refFree {
			s = blobref.Hide(s)
		}
		return oneLine(s, 160)
	}
	var (
		last  agent.Progress
		cause string
		te    *temporal.TimeoutError
		ae    *temporal.ApplicationError
	)
	switch {
	case errors.As(err, &te):
		cause = "its worker stopped answering"
		if te.TimeoutType() != enumspb.TIMEOUT_TYPE_HEARTBEAT {
			cause = "its worker did not take it in time"
		}
		if te.HasLastHeartbeatDetails() {
			last = decodeProgress(te.LastHeartbeatDetails)
		}
	case errors.As(err, &ae):
		cause = "it failed: " + message(ae.Message())
		if ae.Type() == activities.ErrTypeWorkerStopping {
			cause = "its worker was shut down"
		}
		if ae.HasDetails() {
			last = decodeProgress(ae.Details)
		}
	default:
		cause = "it failed: " + message(err.Error())
	}
	if last.Interrupted == nil {
		last.Interrupted = before
	}
	i := agent.After(last, cause)
	return &i
}

// decodeProgress reads the first detail of a failure as progress; one
// that is not progress (a store retry's note, a failure of an older
// worker) reads as none. The SDK's own values of a failure never sent
// over the wire can panic on a mismatch: that, too, reads as none rather
// than failing the workflow task.
func decodeProgress(get func(...any) error) (p agent.Progress) {
	defer func() {
		if recover() != nil {
			p = agent.Progress{}
		}
	}()
	if get(&p) != nil {
		return agent.Progress{}
	}
	return p
}

// maxRetryNotes bounds the retry notes the run's details in the Web UI
// show.
const maxRetryNotes = 5

// retryNote is one visit that ran again after an interrupted attempt, for
// the run's details in the Web UI.
type retryNote struct {
	Node  string
	Visit int
	Note  string
}

// noteRetry keeps a visit's retry note, if its output has one, for the
// run's details in the Web UI (details): the server may have started the
// visit again without the workflow knowing, so the output is where the
// run learns of it.
func (r *runImpl) noteRetry(ctx workflow.Context, node string, visit int, out map[string]any) {
	note, _ := out[agent.RetryNoteKey].(string)
	if note == "" {
		return
	}
	if r.refFree(ctx) {
		// A worker of an older build wrote the note as it was.
		note = blobref.Hide(note)
	}
	workflow.GetLogger(ctx).Info("a visit ran again after an interrupted attempt", "node", node, "visit", visit)
	r.retryNotes = append(r.retryNotes, retryNote{Node: node, Visit: visit, Note: note})
	if over := len(r.retryNotes) - maxRetryNotes; over > 0 {
		r.retryNotes = r.retryNotes[over:]
	}
	r.details(ctx)
}

// retryDetails is the retry notes as the run's details show them.
func (r *runImpl) retryDetails() string {
	if len(r.retryNotes) == 0 {
		return ""
	}
	s := "\n**Visits that ran again after an interrupted attempt**\n"
	for _, n := range r.retryNotes {
		s += fmt.Sprintf("\n- %s visit %d: %s", n.Node, n.Visit, oneLine(n.Note, 400))
	}
	return s + "\n"
}

// withSummary is o with suffix added to its summary once.
func withSummary(o workflow.ActivityOptions, suffix string) workflow.ActivityOptions {
	if !strings.HasSuffix(o.Summary, suffix) {
		o.Summary += suffix
	}
	return o
}

// refFree says whether this execution's notes hide the blob keys they
// quote (changeRefFreeNotes).
func (r *runImpl) refFree(ctx workflow.Context) bool {
	return r.at(ctx, changeRefFreeNotes, versionRefFreeNotes)
}

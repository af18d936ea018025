package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Notice is one notice to one endpoint, as the workflow asks for it. It
// travels in Temporal's history, so it holds no secret: the endpoint by
// name, never its URL, and no link (links are signed when it is sent).
type Notice struct {
	// Endpoint names the endpoint (Endpoint.Name).
	Endpoint string `json:"endpoint"`
	// Key is the notice's idempotency key (Key): the same for every
	// attempt to send it, and for nothing else.
	Key string `json:"key"`
	// Event is one of graph.NotifyEvents.
	Event string `json:"event"`
	Run   string `json:"run"`
	Graph string `json:"graph,omitempty"`
	// Node is the node that asks (waiting) or where the run stopped.
	Node string `json:"node,omitempty"`
	// Question is what a waiting run asks.
	Question *Question `json:"question,omitempty"`
	// Status is the run's status: waiting, failed, failed_resumable,
	// completed.
	Status string `json:"status,omitempty"`
	// Error says why the run failed or stopped.
	Error string `json:"error,omitempty"`
	// Time is when it happened, on the workflow's clock.
	Time time.Time `json:"time"`
	// Thread is the GitHub issue or pull request of a run started from
	// GitHub, where a github endpoint posts the notice.
	Thread *Thread `json:"thread,omitempty"`
}

// Question is a question a waiting run asks.
type Question struct {
	ID      string   `json:"id"`
	Text    string   `json:"text"`
	Options []string `json:"options,omitempty"`
	// Asking names this asking of the question (the notice's event key,
	// runapi.PendingQuestion.Asking); its answer links name it, so they
	// cannot answer the question asked again. A notice without it (from
	// a run of an older build) carries no answer links.
	Asking string `json:"asking,omitempty"`
}

// Key is the idempotency key of the notice of run's event (an event key
// such as "waiting/judge-2/7", which names the question and when it was
// asked) to endpoint: 32 hex digits, the same wherever it is computed.
func Key(run, event, endpoint string) string {
	sum := sha256.Sum256([]byte("tether notice v1\x00" + run + "\x00" + event + "\x00" + endpoint))
	return hex.EncodeToString(sum[:16])
}

// Package webhook serves GitHub's webhooks for `tether console`
// (POST /hooks/github): it checks each delivery's X-Hub-Signature-256
// (HMAC-SHA256 of the body with TETHER_GITHUB_WEBHOOK_SECRET, compared in
// constant time), reads the payload with go-github's types, routes it
// (Route) and starts the workflow that carries out its plan on the
// workers, under an id derived from X-GitHub-Delivery, so a redelivery
// starts nothing twice. It answers at once (202); Temporal does the work.
// It holds no GitHub credential and calls no GitHub API.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	gh "github.com/google/go-github/v88/github"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/github/triggers"
	"github.com/tether-run/tether/internal/runapi"
)

// SecretEnv names the webhook's secret, as set in the GitHub App (or the
// repository's webhook).
const SecretEnv = "TETHER_GITHUB_WEBHOOK_SECRET"

// Path is where the console serves the webhook.
const Path = "/hooks/github"

// MinSecret is the shortest secret accepted.
const MinSecret = 16

// maxPayload is GitHub's cap on a delivery's payload (25 MB).
const maxPayload = 25 << 20

// Starter starts workflows: the Temporal client.
type Starter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// Handler serves the webhook.
type Handler struct {
	secret   []byte
	triggers *triggers.Triggers
	temporal Starter
	log      *slog.Logger
}

// New checks the secret and returns the handler.
func New(secret []byte, t *triggers.Triggers, temporal Starter, log *slog.Logger) (*Handler, error) {
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("%s must be set, to at least %d characters (the secret the GitHub App's webhook is set up with; `openssl rand -hex 32`), for the console to take GitHub's webhooks", SecretEnv, MinSecret)
	}
	if t == nil {
		return nil, fmt.Errorf("%s is set but %s is not: the console would take GitHub's webhooks and start nothing; set both, or neither", SecretEnv, triggers.Env)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Handler{secret: secret, triggers: t, temporal: temporal, log: log}, nil
}

// Response is the body of every answer, which GitHub shows with the
// delivery.
type Response struct {
	Delivery string `json:"delivery,omitempty"`
	// Plan is what the delivery starts ("" when nothing), Run the run it
	// starts or acts on, Note why nothing.
	Plan string `json:"plan,omitempty"`
	Run  string `json:"run,omitempty"`
	Note string `json:"note,omitempty"`
}

// ServeHTTP takes one delivery.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, event := gh.DeliveryID(r), gh.WebHookType(r)
	body := http.MaxBytesReader(w, r.Body, maxPayload)
	payload, err := gh.ValidatePayloadFromBody(r.Header.Get("Content-Type"), body, r.Header.Get(gh.SHA256SignatureHeader), h.secret)
	if err != nil {
		// Never the payload, never the signature: a forged request is
		// noted with where it came from.
		h.log.Warn("github webhook refused: its signature does not match "+SecretEnv, "delivery", printable(id), "event", printable(event), "remote", r.RemoteAddr, "error", err.Error())
		reply(w, http.StatusUnauthorized, Response{Note: "the X-Hub-Signature-256 of this delivery does not match the webhook's secret"})
		return
	}
	if id == "" || event == "" || len(id) > 100 {
		reply(w, http.StatusBadRequest, Response{Note: "a delivery needs X-GitHub-Delivery and X-GitHub-Event"})
		return
	}
	if event == github.EventPing {
		reply(w, http.StatusOK, Response{Delivery: id, Note: "pong"})
		return
	}
	d, ok, err := github.Read(id, event, payload)
	if err != nil {
		h.log.Warn("github webhook: a payload Tether cannot read", "delivery", id, "event", event, "error", err.Error())
		reply(w, http.StatusBadRequest, Response{Delivery: id, Note: err.Error()})
		return
	}
	if !ok {
		reply(w, http.StatusAccepted, Response{Delivery: id, Note: "Tether does not act on " + event})
		return
	}
	plan, why := Route(d, h.triggers)
	if plan == nil {
		h.log.Debug("github webhook: nothing to do", "delivery", id, "event", event, "repo", d.Repo, "why", why)
		reply(w, http.StatusAccepted, Response{Delivery: id, Note: why})
		return
	}
	resp := Response{Delivery: id, Plan: plan.Kind, Run: plan.Run}
	if plan.Start != nil {
		resp.Run = plan.Start.RunID
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	_, err = h.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       github.DeliveryWorkflowID(id),
		TaskQueue:                runapi.TaskQueue,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// A second delivery of the same id is refused, not joined.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		WorkflowExecutionTimeout:                 7 * 24 * time.Hour,
		StaticSummary:                            fmt.Sprintf("GitHub %s.%s on %s#%d: %s", event, d.Action, d.Repo, plan.Thread, plan.Kind),
	}, github.WorkflowType, plan)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &started):
		h.log.Info("github webhook: a delivery handled already", "delivery", id, "event", event, "repo", d.Repo)
		resp.Note = "this delivery was handled already"
		reply(w, http.StatusAccepted, resp)
	case err != nil:
		h.log.Error("github webhook: could not start the delivery's workflow; GitHub can redeliver it", "delivery", id, "event", event, "error", err.Error())
		reply(w, http.StatusServiceUnavailable, Response{Delivery: id, Note: "Temporal did not take the delivery; redeliver it once Temporal is reachable"})
	default:
		h.log.Info("github webhook: delivery taken", "delivery", id, "event", event, "repo", d.Repo, "plan", plan.Kind, "run", resp.Run)
		reply(w, http.StatusAccepted, resp)
	}
}

func reply(w http.ResponseWriter, status int, r Response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(r)
}

// printable keeps a header value fit for a log line.
func printable(s string) string {
	if len(s) > 100 {
		s = s[:100]
	}
	out := []rune{}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			r = '?'
		}
		out = append(out, r)
	}
	return string(out)
}

package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
)

// The activities below serve only executions recorded before the
// one-trip-visit change (workflows/legacy_visit.go): a visit there was a
// RestoreSession then an ExecuteNode on the worker that holds the live
// session. They go once no open execution can still reach that branch
// (docs/operations.md, "Retiring a change id").

// liveEnv returns the live root and working directory of one backend for one
// run's node on this worker, for the activities of runs recorded before
// one-trip visits: the directories a trunk Visit would use.
func (a *Activities) liveEnv(backendName, runID string, node graph.Node) (agent.Env, error) {
	_, base, cwd, err := a.visitDirs(&VisitRequest{RunID: runID, NodeID: node.ID, Node: node})
	if err != nil {
		return agent.Env{}, err
	}
	if err := a.makeWorkdir(node.ID, base, cwd); err != nil {
		return agent.Env{}, err
	}
	return a.agentEnv(backendName, runID, cwd)
}

// RestoreSession makes a session live in this worker's root: it unpacks the
// blob at StateRef, or with no StateRef asks the backend's packer whether
// the session is already there. A missing, corrupt or foreign blob is
// ErrTypeSessionUnavailable; a store fault is an ordinary (retried) error.
func (a *Activities) RestoreSession(ctx context.Context, req *RestoreRequest) (*RestoreResult, error) {
	b, ok := a.Backends.Get(req.Backend)
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("backend %q is not available on worker %s", req.Backend, a.Queue), ErrTypeSessionUnavailable, nil)
	}
	env, err := a.liveEnv(req.Backend, req.RunID, req.Node)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
	}
	packer := b.Packer(env)
	if packer == nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("backend %q cannot restore sessions", req.Backend), ErrTypeSessionUnavailable, nil)
	}
	if req.StateRef == "" {
		present := packer.HasSession(ctx, req.SessionID)
		return &RestoreResult{Queue: a.Queue, Present: present}, nil
	}
	stop := a.heartbeat(ctx)
	defer stop()
	data, err := blob.GetBytesMax(ctx, a.Blobs, req.StateRef, a.sessionBlobMax())
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("session blob for node %q is gone", req.Node.ID), ErrTypeSessionUnavailable, err)
	case errors.Is(err, blob.ErrTooLarge):
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("session blob for node %q is larger than any session archive may be: %v", req.Node.ID, err), ErrTypeSessionUnavailable, err)
	case err != nil:
		return nil, fmt.Errorf("read session blob for node %q: %w", req.Node.ID, err)
	}
	if note := checkSessionBlob(req.RunID, req.StateRef, req.Digest, data); note != "" {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("session blob for node %q: %s", req.Node.ID, note), ErrTypeSessionUnavailable, nil)
	}
	if err := packer.UnpackSession(ctx, req.SessionID, data); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("session blob for node %q cannot be unpacked: %v", req.Node.ID, err), ErrTypeSessionUnavailable, err)
	}
	a.logger().Info("session restored", "run", req.RunID, "node", req.Node.ID, "backend", req.Backend, "session_id", req.SessionID, "bytes", len(data))
	return &RestoreResult{Queue: a.Queue, Present: true}, nil
}

// ExecuteNode runs one visit of an agent node and, when asked to, packs
// the session into the blob store before returning, while its files are
// still live. A failed pack is reported in the result, not as an error: the
// agent already ran, and a retry would run it twice. It is the visit
// activity of runs recorded before one-trip visits (see Visit).
func (a *Activities) ExecuteNode(ctx context.Context, req *ExecuteRequest) (*ExecuteResult, error) {
	b, sessionID, err := a.pickBackend(req.Backend, req.Node, req.SessionID)
	if err != nil {
		return nil, err
	}
	env, err := a.liveEnv(b.Name(), req.RunID, req.Node)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
	}
	ctx, confined, err := a.confineVisit(ctx, req.Node)
	if err != nil {
		return nil, err
	}
	res, err := a.runAgent(ctx, agentRun{
		runID: req.RunID, nodeID: req.NodeID, visit: req.Visit, node: req.Node, b: b, env: env,
		input: req.Input, prev: req.PrevOutput, sessionID: sessionID,
		fork: req.Node.Session == graph.SessionFork && sessionID != "", answer: req.Answer,
		packTo: req.PackTo, pauseTo: req.PauseTo,
	})
	if err == nil {
		noteRefused(res.Output, confined)
	}
	return res, err
}

// ExecuteRequest is one visit of an agent node.
type ExecuteRequest struct {
	RunID  string     `json:"run_id"`
	NodeID string     `json:"node_id"`
	Visit  int        `json:"visit"`
	Node   graph.Node `json:"node"`
	// Backend is the effective backend the workflow planned for.
	Backend    string         `json:"backend"`
	Input      map[string]any `json:"input,omitempty"`
	PrevOutput map[string]any `json:"prev_output,omitempty"`
	// SessionID resumes that conversation; set only after a successful
	// unpack or has-session on this worker.
	SessionID string        `json:"session_id,omitempty"`
	Answer    *agent.Answer `json:"answer,omitempty"`
	// PackTo is the blob key a successful persist visit packs its session
	// into; empty for non-persist nodes.
	PackTo string `json:"pack_to,omitempty"`
	// PauseTo is the blob key an ask_user packs the in-flight session into.
	PauseTo string `json:"pause_to,omitempty"`
}

// RestoreRequest asks a worker to make a session live in its root: unpack a
// blob (StateRef set) or, with StateRef empty, only check HasSession.
type RestoreRequest struct {
	RunID     string     `json:"run_id"`
	Node      graph.Node `json:"node"`
	Backend   string     `json:"backend"`
	SessionID string     `json:"session_id"`
	StateRef  string     `json:"state_ref,omitempty"`
	// Digest is the blob's recorded sha256; a blob that differs is
	// refused, and so is a missing digest on a ref minted after digests
	// were recorded.
	Digest string `json:"digest,omitempty"`
}

// RestoreResult names the worker queue where the session is now live.
type RestoreResult struct {
	Queue   string `json:"queue"`
	Present bool   `json:"present"`
}

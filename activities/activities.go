// Package activities holds GraphRun's activities: the only code that
// touches agents, tools, disks and stores. Each is idempotent: every key it
// writes comes from its input (minted by the workflow), never from the
// attempt, so a retry writes the same bytes to the same place.
package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/notify"
	sessionpack "github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/telemetry"
	"github.com/tether-run/tether/internal/workspace"
)

// MaxOutputText is the longest agent reply an output carries whole.
const MaxOutputText = 256 << 10

// LostAnswerIntro precedes, in a fresh conversation's prompt, the answer
// to a question asked in a conversation that could not be restored, so the
// answer reaches the agent all the same.
const LostAnswerIntro = "Earlier in this visit you asked the user a question; the conversation you asked it in could not be restored. The user's answer:"

// Activities carries the worker's dependencies.
type Activities struct {
	Blobs    blob.Store
	Runs     *runstore.Store
	Backends Backends
	// StateDir holds this worker's live session roots, one per run and
	// backend (runs/<run>/<backend>).
	StateDir string
	// WorkDir holds the runs' working directories.
	WorkDir string
	// PassEnv names worker environment variables every tool node gets
	// besides the minimal base (cliexec.BaseEnv) and its node's env: the
	// worker's TETHER_PASS_ENV, as the agent CLIs get it.
	PassEnv []string
	// Sandbox confines tool nodes as the agent CLIs are confined (see
	// internal/sandbox); nil runs them unconfined.
	Sandbox *sandbox.Sandbox
	// Workspaces keeps the runs' working directories durable; nil runs
	// every visit in a plain directory that nothing restores or snapshots.
	Workspaces *workspace.Manager
	// Queue is this worker's own task queue.
	Queue  string
	Logger *slog.Logger
	// HeartbeatEvery is how often a running visit heartbeats.
	HeartbeatEvery time.Duration
	// ShutdownGrace is how long a visit runs on once its worker begins to
	// stop; a visit still running then is ended and handed back
	// (ErrTypeWorkerStopping), so that another worker starts it at once.
	ShutdownGrace time.Duration
	// Metrics counts visits and bytes moved; nil counts nothing.
	Metrics *telemetry.Metrics
	// Notifier sends the runs' notices (TETHER_NOTIFY); nil sends none.
	Notifier *notify.Sender
	// Temporal is where CheckRunID looks for other runs under a new run's
	// id; nil looks in the run store only.
	Temporal Executions
	// Health is whether this worker's store works (health.go); nil is
	// always healthy.
	Health *Health

	live liveSessions
	// inflight counts this worker's running visits per run: ForgetRun
	// leaves a run alone while one is running.
	inflight inflightRuns
	// maxSessionBlob overrides the cap on a session blob read (tests);
	// zero is the packer's own.
	maxSessionBlob int64
}

// liveSessions remembers, per live session on this worker, the digest of
// the blob last packed from it and the stat signature its main file had
// then, for as long as no visit touched it since: a restore of that very
// blob, onto a session file that still has that signature, can be skipped.
type liveSessions struct {
	mu sync.Mutex
	m  map[string]liveSession
}

type liveSession struct {
	digest, sig string
	// manifest is the session as that blob left it, when known: what an
	// incremental pack of the next visit starts from.
	manifest *sessionpack.Manifest
}

// incrementalPacker is a packer that packs and restores incremental
// packs (every backend's, which is the shared packer).
type incrementalPacker interface {
	PackDelta(ctx context.Context, sessionID string, base *sessionpack.Manifest) ([]byte, *sessionpack.Manifest, error)
	UnpackParts(ctx context.Context, sessionID string, parts ...[]byte) (*sessionpack.Manifest, error)
}

// slotParts bounds a slot's incremental packs, by the size of its base.
// A visit past the bound, or whose slot's parts together outweigh its
// base, packs the whole session again: a restore fetches at most
// maxSlotParts parts, and the store holds at most about twice what the
// session packs to. Every checkpoint names each part of the slot, and of
// the superseded slot kept for rewinds, at about 60 bytes a part that do
// not compress (a key and a sha256), for as long as the run keeps its
// checkpoints; so a slot may have one part for every partBaseBytes of
// base, between minSlotParts and maxSlotParts: a small session rebases
// sooner, a large one (whose whole pack costs most) later.
const (
	minSlotParts  = 16
	maxSlotParts  = 64
	partBaseBytes = 64 << 10
)

func slotParts(baseBytes int64) int {
	return int(min(max(baseBytes/partBaseBytes, minSlotParts), maxSlotParts))
}

// extension is the slot a persist visit may add an incremental pack to:
// the node's own slot it resumed, as this worker holds it.
type extension struct {
	manifest  *sessionpack.Manifest
	last      string // the slot's LastDigest
	parts     int
	partBytes int64
	baseBytes int64
}

// whole reports whether the visit packs the whole session rather than a
// part after the slot's.
func (x *extension) whole() bool {
	return x == nil || x.manifest == nil || x.last == "" || x.parts >= slotParts(x.baseBytes) || (x.baseBytes > 0 && x.partBytes >= x.baseBytes)
}

// forget drops every live session under root.
func (l *liveSessions) forget(root string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.m {
		if strings.Contains(k, "\x00"+root+string(filepath.Separator)) {
			delete(l.m, k)
		}
	}
}

// inflightRuns counts running visits per run.
type inflightRuns struct {
	mu sync.Mutex
	n  map[string]int
}

func (f *inflightRuns) add(run string, d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	if f.n[run] += d; f.n[run] <= 0 {
		delete(f.n, run)
	}
}

func (f *inflightRuns) running(run string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[run] > 0
}

// RunForgetter returns what the workspace manager calls when it evicts a
// run from its caches (workspace.WithEvicted). It is a function, not a
// method, so that registering the activities does not take it for one.
func RunForgetter(a *Activities) func(run string) { return a.forgetRun }

// forgetRun removes what this worker keeps of a run it no longer serves:
// the run's live session roots. A later visit restores the conversation
// from the blob store, as on any other worker. A run with a visit running
// here is left alone.
func (a *Activities) forgetRun(run string) {
	if a.inflight.running(run) || runstore.ValidateRunID(run) != nil {
		return
	}
	root := filepath.Join(a.StateDir, "runs", run)
	a.live.forget(root)
	if err := os.RemoveAll(root); err != nil {
		a.logger().Warn("could not remove the live sessions of an evicted run", "run", run, "error", err)
	}
}

// sessionFiler is implemented by packers that can name a session's main
// file (the transcript the CLI resumes from).
type sessionFiler interface {
	SessionFile(ctx context.Context, sessionID string) (string, error)
}

// signature is what a live session looks like on disk: its main file's
// size, modification time and inode; "" when it is not there.
func signature(ctx context.Context, p agent.SessionPacker, sessionID string) string {
	sf, ok := p.(sessionFiler)
	if !ok {
		if p.HasSession(ctx, sessionID) {
			return "present"
		}
		return ""
	}
	path, err := sf.SessionFile(ctx, sessionID)
	if err != nil {
		return ""
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%d/%d/%d", fi.Size(), fi.ModTime().UnixNano(), ino)
}

func liveKey(backendName string, env agent.Env, sessionID string) string {
	return backendName + "\x00" + env.StateRoot + "\x00" + env.Workdir + "\x00" + sessionID
}

func (l *liveSessions) get(key string) liveSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[key]
}

func (l *liveSessions) set(key string, s liveSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]liveSession{}
	}
	if s.digest == "" || s.sig == "" {
		delete(l.m, key)
		return
	}
	l.m[key] = s
}

// Backends is the set of backends a worker can run, looked up by name.
type Backends []agent.Backend

// Get returns the backend called name.
func (bs Backends) Get(name string) (agent.Backend, bool) {
	for _, b := range bs {
		if b.Name() == name {
			return b, true
		}
	}
	return nil, false
}

// Availability is implemented by backends that can tell, before running,
// whether they can run on this worker (a CLI that is not installed).
type Availability interface {
	Available() error
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

// liveEnv returns the live root and working directory of one backend for one
// run's node on this worker, for the activities of runs recorded before
// one-trip visits: the directories a trunk Visit would use.
func (a *Activities) liveEnv(backendName, runID string, node graph.Node) (agent.Env, error) {
	_, cwd, err := a.visitDirs(&VisitRequest{RunID: runID, NodeID: node.ID, Node: node})
	if err != nil {
		return agent.Env{}, err
	}
	return a.agentEnv(backendName, runID, cwd)
}

// sessionBlobMax is the most a session blob read from the store may hold:
// the largest archive the packer would unpack.
func (a *Activities) sessionBlobMax() int64 {
	if a.maxSessionBlob > 0 {
		return a.maxSessionBlob
	}
	return sessionpack.MaxBlobBytes(sessionpack.DefaultLimits())
}

func mkdirAll(d string) error { return os.MkdirAll(d, 0o700) }

// SaveCheckpoint writes one immutable checkpoint record.
func (a *Activities) SaveCheckpoint(ctx context.Context, req *CheckpointRequest) error {
	if req == nil || req.Checkpoint == nil || req.Checkpoint.RunID == "" || req.Checkpoint.Seq <= 0 {
		return temporal.NewNonRetryableApplicationError("SaveCheckpoint needs a checkpoint with a run id and a positive seq", ErrTypeBadRequest, nil)
	}
	if err := a.Runs.Save(ctx, req.Checkpoint.RunID, req.Checkpoint); err != nil {
		if !errors.Is(err, runstore.ErrSeqTaken) && a.Health.Check(ctx) != nil {
			// This worker's store is broken, not the run's: the workflow
			// hands its task to another worker instead of fail-stopping.
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("save checkpoint %d of run %s on worker %s: %s", req.Checkpoint.Seq, req.Checkpoint.RunID, a.Queue, ErrorText(a.Health.Err())), ErrTypeWorkerUnhealthy, nil)
		}
		return fmt.Errorf("save checkpoint %d of run %s: %w", req.Checkpoint.Seq, req.Checkpoint.RunID, err)
	}
	return nil
}

// DeleteBlobs removes session blobs; a key already gone is success.
func (a *Activities) DeleteBlobs(ctx context.Context, req *DeleteBlobsRequest) error {
	var errs []error
	for _, k := range req.Keys {
		if err := a.Blobs.Delete(ctx, k); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
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

// agentRun is one execution of an agent on this worker.
type agentRun struct {
	runID, nodeID string
	visit         int
	node          graph.Node
	b             agent.Backend
	env           agent.Env
	input, prev   map[string]any
	sessionID     string
	fork          bool
	answer        *agent.Answer
	packTo        string
	pauseTo       string
	// incremental packs to packTo incrementally (extending extend when it
	// allows, else whole with a manifest for the next visit).
	incremental bool
	extend      *extension
	// lostAnswer is a human's answer to a question asked in a conversation
	// that could not be restored; it goes into the fresh one's prompt.
	lostAnswer string
	// workspace is what the prompt sees as .workspace.
	workspace map[string]any
	// lost is what earlier attempts of the visit did before they were
	// interrupted: the agent is told, before its prompt (retry.go).
	lost *agent.Interruption
	// guidance are people's notes for this visit, after the prompt.
	guidance []string
}

// request is the backend request of the run, without its prompt.
func (r agentRun) request() agent.Request {
	return agent.Request{
		RunID: r.runID, NodeID: r.nodeID, Visit: r.visit, Input: r.input,
		SessionID: r.sessionID, Fork: r.fork,
		Model: r.node.Model, Script: r.node.Script, Answer: r.answer, Env: r.env,
		Settings: r.node.AgentSettings(),
	}
}

// runAgent renders the prompt, runs the backend, stamps the output and
// packs the session (to packTo, or to pauseTo when the agent asked).
func (a *Activities) runAgent(ctx context.Context, r agentRun) (*ExecuteResult, error) {
	prompt, err := graph.RenderPrompt(r.node.Prompt, graph.PromptData{Input: r.input, Output: r.prev, Visit: r.visit, Workspace: r.workspace})
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %q: prompt template: %v", r.nodeID, err), ErrTypeBadRequest, err)
	}
	if r.lostAnswer != "" {
		prompt += "\n\n" + LostAnswerIntro + "\n" + r.lostAnswer
	}
	if r.lost != nil {
		prompt = r.lost.Note() + "\n\n" + prompt
	}
	prompt += guidanceText(r.guidance)

	// A worker that is shutting down (a pod being recycled) ends the CLI
	// and says so, so the workflow restarts the visit on another worker
	// instead of failing the node.
	runCtx, stopping := a.untilWorkerStops(ctx)
	stop := a.heartbeat(ctx)
	if r.sessionID != "" {
		a.live.set(liveKey(r.b.Name(), r.env, r.sessionID), liveSession{}) // the visit changes it
	}
	breq := r.request()
	breq.Prompt = prompt
	// The heartbeats carry the visit's latest progress (bounded), so that
	// `tether status` shows what a long visit is doing.
	if key := progressKey(ctx); key != "" {
		visitProgress.begin(key, agent.Progress{Node: r.nodeID, Visit: r.visit, Backend: r.b.Name()})
		breq.Progress = func(p agent.Progress) { visitProgress.update(key, p) }
	}
	res, err := r.b.Execute(runCtx, breq)
	stop()
	if err != nil && stopping() {
		return nil, temporal.NewApplicationError(fmt.Sprintf("worker %s stopped during the visit of node %q: %v", a.Queue, r.nodeID, err), ErrTypeWorkerStopping, err)
	}
	if err != nil {
		if t := agent.ErrorType(err); t != "" {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), t, err)
		}
		return nil, err
	}

	out := map[string]any{"text": res.Text}
	if len(res.Text) > MaxOutputText {
		// Temporal bounds an activity result (2 MB); a larger one would
		// fail the completion and run the agent again. The whole reply
		// stays in the agent's own session.
		out["text"] = strings.ToValidUTF8(res.Text[:MaxOutputText], "") + fmt.Sprintf("\n… [%d more bytes cut; the whole reply is in the agent's session]", len(res.Text)-MaxOutputText)
		out["text_truncated"] = true
	}
	for k, v := range res.Structured {
		out[k] = v
	}
	out[agent.SessionIDKey] = res.SessionID
	out[agent.BackendKey] = r.b.Name()
	out[agent.SessionFingerprintKey] = res.Fingerprint
	if !res.Usage.IsZero() {
		out[agent.UsageKey] = res.Usage
	}
	if r.lost != nil {
		out[agent.RetryNoteKey] = r.lost.Note()
	}
	result := &ExecuteResult{
		Output: out, Backend: r.b.Name(), SessionID: res.SessionID, Fingerprint: res.Fingerprint, Queue: a.Queue,
		Usage: res.Usage,
	}

	key := r.packTo
	if res.NeedsInteraction != nil {
		result.Questions = res.NeedsInteraction.Questions
		result.PendingToolUseID = res.NeedsInteraction.PendingToolUseID
		key = r.pauseTo
	}
	if key != "" {
		var from *extension
		incremental := r.incremental && key == r.packTo
		if incremental && res.SessionID == r.sessionID && !r.fork {
			from = r.extend
		}
		var pk packed
		pk, result.PackError = a.pack(ctx, r.b, r.env, res.SessionID, key, incremental, from)
		if result.Packed = result.PackError == ""; result.Packed {
			result.PackedTo, result.PackDigest, result.PackSize, result.PackDeltaOf = key, pk.digest, pk.size, pk.deltaOf
			if p := r.b.Packer(r.env); p != nil {
				a.live.set(liveKey(r.b.Name(), r.env, res.SessionID), liveSession{digest: pk.digest, sig: signature(ctx, p, res.SessionID), manifest: pk.manifest})
			}
		}
	}
	a.logger().Info("visit done", "run", r.runID, "node", r.nodeID, "visit", r.visit, "backend", r.b.Name(), "session_id", res.SessionID, "asked", len(result.Questions), "packed", result.Packed)
	return result, nil
}

// pickBackend returns the backend to run: the planned one if it can run
// here, else the node's first fallback that can. A session id never moves
// to another backend.
func (a *Activities) pickBackend(planned string, node graph.Node, sessionID string) (agent.Backend, string, error) {
	candidates := append([]string{planned, node.Backend}, node.Fallback...)
	var reasons []string
	for _, name := range candidates {
		b, ok := a.Backends.Get(name)
		if !ok {
			reasons = append(reasons, name+": not registered on this worker")
			continue
		}
		if av, ok := b.(Availability); ok {
			if err := av.Available(); err != nil {
				reasons = append(reasons, fmt.Sprintf("%s: %v", name, err))
				continue
			}
		}
		if name != planned {
			return b, "", nil
		}
		return b, sessionID, nil
	}
	err := fmt.Errorf("%w: node %q can run on none of its backends (%v); install the CLI on the worker or add a fallback", agent.ErrNotInstalled, node.ID, reasons)
	return nil, "", temporal.NewNonRetryableApplicationError(err.Error(), agent.ErrorType(err), err)
}

// packed is a session blob a visit put in the store.
type packed struct {
	digest  string
	size    int64
	deltaOf string // the digest it extends, for an incremental pack
	// manifest is what the blob left the session as (incremental runs).
	manifest *sessionpack.Manifest
}

// pack packs the session into key. An incremental run's pack extends from
// (the node's own slot it resumed) with only what the visit added, when
// from allows it; otherwise it packs the whole session. The reason is why
// it failed ("" when it did not).
func (a *Activities) pack(ctx context.Context, b agent.Backend, env agent.Env, sessionID, key string, incremental bool, from *extension) (packed, string) {
	packer := b.Packer(env)
	if packer == nil {
		return packed{}, fmt.Sprintf("backend %s has no session packer", b.Name())
	}
	var (
		pk   packed
		data []byte
		err  error
	)
	ip, ok := packer.(incrementalPacker)
	switch {
	case incremental && ok:
		var base *sessionpack.Manifest
		if !from.whole() {
			base = from.manifest
		}
		data, pk.manifest, err = ip.PackDelta(ctx, sessionID, base)
		if err == nil && base != nil {
			if h, herr := sessionpack.ReadHeader(data); herr == nil && h.Kind == sessionpack.KindDelta {
				pk.deltaOf = from.last
			}
		}
	default:
		data, err = packer.PackSession(ctx, sessionID)
	}
	if err != nil {
		return packed{}, "pack: " + err.Error()
	}
	if err := blob.PutBytes(ctx, a.Blobs, key, data, blob.CreateOnly()); err != nil {
		return packed{}, "put: " + err.Error()
	}
	a.Metrics.PackBytes(telemetry.WhatSession, int64(len(data)))
	pk.digest, pk.size = digestOf(data), int64(len(data))
	return pk, ""
}

// HeartbeatOnRetry is the blob store's retry hook for workers: while a
// store operation waits out an outage inside an activity, the activity
// keeps heartbeating, so the wait is not taken for a dead worker.
func HeartbeatOnRetry(ctx context.Context, op, key string, attempt int, err error) {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).IsLocalActivity {
		return
	}
	note := fmt.Sprintf("store %s %s: attempt %d failed (%v); retrying", op, key, attempt, err)
	// The visit's progress stays first: it is what `tether status` shows,
	// and what an attempt after this one, should it be lost, reads back.
	activity.RecordHeartbeat(ctx, append(visitProgress.details(progressKey(ctx)), note)...)
}

// untilWorkerStops returns a context that is cancelled once the worker
// has been stopping for ShutdownGrace (a visit that ends before then ends
// as it would have), and a func that reports whether that happened.
func (a *Activities) untilWorkerStops(ctx context.Context) (context.Context, func() bool) {
	if !activity.IsActivity(ctx) {
		return ctx, func() bool { return false }
	}
	runCtx, cancel := context.WithCancel(ctx)
	var stopped atomic.Bool
	go func() {
		select {
		case <-activity.GetWorkerStopChannel(ctx):
		case <-runCtx.Done():
			return
		}
		grace := time.NewTimer(a.ShutdownGrace)
		defer grace.Stop()
		select {
		case <-grace.C:
			stopped.Store(true)
			cancel()
		case <-runCtx.Done():
		}
	}()
	return runCtx, func() bool {
		s := stopped.Load()
		cancel()
		return s
	}
}

// heartbeat records a heartbeat periodically until stopped, so a dead
// worker is noticed within the heartbeat timeout rather than the node's.
func (a *Activities) heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	every := a.HeartbeatEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	// Beat well inside the timeout the workflow chose, whatever it is.
	if ht := activity.GetInfo(ctx).HeartbeatTimeout; ht > 0 && every > ht/3 {
		every = ht / 3
	}
	// Every heartbeat of the attempt carries its visit's latest progress,
	// once the visit has begun (see runAgent).
	key := progressKey(ctx)
	visitProgress.hold(key)
	activity.RecordHeartbeat(ctx, visitProgress.details(key)...)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, visitProgress.details(key)...)
			}
		}
	}()
	return func() {
		close(done)
		visitProgress.release(key)
	}
}

// Package scripted is Tether's built-in deterministic agent. It answers
// from the node's script instead of a model, yet keeps its conversation the
// way the real CLIs do: in session files under the state root the worker
// gives it, in Tether's session log (JSONL backend). So it reports a session
// id, resumes by id with the turn count and history intact, forks, refuses
// to resume an id it does not have, asks the user, fails, or returns
// structured output on cue. Everything session: persist does can therefore
// run offline against it.
//
// Layout: a session is one file, <StateRoot>/sessions/<bucket>/<id>.jsonl,
// where <bucket> is jsonl.Bucket of the working directory the session was
// created in ("_no-cwd" without one) and <id> is "sc-" followed by a ULID.
// Copying that file to another state root moves the session. Its packer is
// the shared one (internal/packer), see packer.go.
package scripted

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/backend/scripted/facts"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/sessionlog"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
	"github.com/tether-run/tether/internal/treepolicy"
)

// IDPrefix starts every session id the scripted agent mints.
const IDPrefix = "sc-"

// askTool is the tool call that records a question to the user.
const askTool = "ask_user"

// sessionsDir holds a state root's sessions.
const sessionsDir = "sessions"

// SessionsDir is where the sessions of a state root live.
func SessionsDir(stateRoot string) string { return filepath.Join(stateRoot, sessionsDir) }

// Name is the backend's name in graphs and the catalogue.
const Name = facts.Name

// Options configure a Backend.
type Options struct {
	// Logger receives warnings; nil means slog.Default().
	Logger *slog.Logger
	// NewID mints session ids; nil means IDPrefix + a new ULID.
	NewID func() string
	// Redact is what packing a session does with a secret-looking token
	// (default packer.RedactDetect).
	Redact packer.RedactMode
	// Policy names the credentials and CLI state files its archives never
	// hold (packer.WithPolicy; nil: treepolicy's base rules).
	Policy *treepolicy.Policy
}

// Backend is the scripted agent. It holds no state between visits: every
// Execute opens the session log of its state root and closes it again, so
// any visit may land on any root that holds the session's file.
type Backend struct {
	logger *slog.Logger
	newID  func() string
	redact packer.RedactMode
	policy *treepolicy.Policy
}

var _ agent.Backend = (*Backend)(nil)

// Configured is the scripted agent as the worker's configuration sets it
// up: it takes only its packer's redaction mode and policy.
func Configured(o cliexec.Options) agent.Backend {
	return New(Options{Redact: o.Redact, Policy: o.Policy})
}

// New returns the scripted backend.
func New(opts Options) *Backend {
	b := &Backend{logger: opts.Logger, newID: opts.NewID, redact: opts.Redact, policy: opts.Policy}
	if b.logger == nil {
		b.logger = slog.Default()
	}
	if b.newID == nil {
		b.newID = func() string { return IDPrefix + ulid.Make().String() }
	}
	return b
}

// Name implements agent.Executor.
func (b *Backend) Name() string { return Name }

// Packer implements agent.Backend with the shared packer, moving the
// session's one log file.
func (b *Backend) Packer(env agent.Env) agent.SessionPacker {
	opts := []packer.Option{packer.WithRedact(b.redact)}
	if b.policy != nil {
		opts = append(opts, packer.WithPolicy(b.policy))
	}
	return packer.New(Name, env, packer.DefaultLimits(), packer.Files(places), opts...)
}

// Fingerprint implements agent.Backend: see the package function.
func (b *Backend) Fingerprint(req agent.Request) string {
	return Fingerprint(req.Model, req.Script, req.Settings)
}

// Execute runs one visit: open (or resume, or fork) the session, record the
// turn's opening durably, render the reply from the script, and record how
// the turn ended.
func (b *Backend) Execute(ctx context.Context, req agent.Request) (agent.Result, error) {
	switch {
	case req.Env.StateRoot == "":
		return agent.Result{}, errors.New("scripted: no state root: the worker must give every visit one")
	case req.Answer != nil && req.SessionID == "":
		return agent.Result{}, errors.New("scripted: an answer needs the session that asked (SessionID is empty)")
	case req.Fork && req.SessionID == "":
		return agent.Result{}, errors.New("scripted: fork needs the SessionID to copy")
	}
	log := jsonl.Open(SessionsDir(req.Env.StateRoot))
	defer log.Close()

	id, turns, err := b.open(ctx, log, req)
	if err != nil {
		return agent.Result{}, err
	}
	res := agent.Result{SessionID: id, Fingerprint: b.Fingerprint(req)}
	number := 1
	if len(turns) > 0 {
		number = turns[len(turns)-1].Number + 1
	}
	t := &turn{log: log, id: id, number: number, history: turns}
	if err := t.begin(ctx, req); err != nil {
		return res, err
	}
	out, err := t.reply(ctx, req)
	if err != nil {
		return res, err
	}
	res.Text, res.Structured, res.NeedsInteraction = out.Text, out.Structured, out.NeedsInteraction
	res.Usage = Usage(t.prompt, out.Text)
	if req.Progress != nil {
		req.Progress(agent.Progress{Node: req.NodeID, Visit: req.Visit, Backend: Name,
			Text: strings.TrimSpace(out.Text), Usage: res.Usage}.Bound())
	}
	return res, nil
}

// Usage is what the scripted agent reports a turn cost: a token per word
// of the prompt in, a token per word of the reply out, and a known cost of
// nothing, so that dry runs exercise usage accounting and budgets.
func Usage(prompt, reply string) agent.Usage {
	return agent.Usage{InputTokens: int64(len(strings.Fields(prompt))), OutputTokens: int64(len(strings.Fields(reply))), CostKnown: true}
}

// open returns the session the visit runs in and its earlier turns: every
// one when the script's templates may read them (History) or the visit
// forks, else the last ones, which is all a turn needs otherwise, read
// from the end of the log at a cost that does not grow with the session.
func (b *Backend) open(ctx context.Context, log *sessionlog.Coordinator, req agent.Request) (string, []Turn, error) {
	if req.SessionID == "" {
		id := b.newID()
		h := sessionlog.Header{ID: id, Cwd: req.Env.Workdir, Backend: Name}
		if err := log.Create(ctx, h); err != nil {
			return "", nil, fmt.Errorf("scripted: new session: %w", err)
		}
		return id, nil, nil
	}
	if !req.Fork && !readsHistory(req.Script) {
		src, err := b.resume(ctx, log.LoadTail, req.SessionID, req.Env.StateRoot)
		if err != nil {
			return "", nil, err
		}
		if turns, ok := lastTurns(src.Events); ok {
			return src.Header.ID, turns, nil
		}
		// A log written before turns were numbered: read it whole.
	}
	src, err := b.resume(ctx, log.Load, req.SessionID, req.Env.StateRoot)
	if err != nil {
		return "", nil, err
	}
	if !req.Fork {
		return src.Header.ID, history(src.Events), nil
	}
	id := b.newID()
	h := sessionlog.Header{
		ID:         id,
		Cwd:        req.Env.Workdir,
		Backend:    Name,
		ForkedFrom: &sessionlog.Lineage{SessionID: src.Header.ID, Seq: src.LastSeq()},
	}
	if err := log.Create(ctx, h); err != nil {
		return "", nil, fmt.Errorf("scripted: fork %s: %w", src.Header.ID, err)
	}
	copied := make([]sessionlog.Event, len(src.Events))
	for i, e := range src.Events {
		e.Seq = 0
		copied[i] = e
	}
	if err := log.Append(ctx, id, copied...); err != nil {
		return "", nil, fmt.Errorf("scripted: fork %s into %s: %w", src.Header.ID, id, err)
	}
	return id, history(src.Events), nil
}

// resume loads an existing session; a missing one is agent.ErrNoSession,
// never a new session under that id.
func (b *Backend) resume(ctx context.Context, load func(context.Context, string) (*sessionlog.Log, error), id, root string) (*sessionlog.Log, error) {
	if err := b.settle(root, id); err != nil {
		return nil, fmt.Errorf("scripted: resume %s: %w", id, err)
	}
	src, err := load(ctx, id)
	if errors.Is(err, sessionlog.ErrNotFound) || errors.Is(err, sessionlog.ErrInvalid) {
		return nil, fmt.Errorf("%w %s under %s: start a fresh session or restore it first", agent.ErrNoSession, id, root)
	}
	if err != nil {
		return nil, fmt.Errorf("scripted: resume %s: %w", id, err)
	}
	if src.Header.Backend != Name {
		return nil, fmt.Errorf("%w %s: the log under %s belongs to backend %q", agent.ErrNoSession, id, root, src.Header.Backend)
	}
	return src, nil
}

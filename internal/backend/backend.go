// Package backend defines what an agent backend is to Tether: an executor
// that runs one visit of an agent node, and (for backends with the persist
// capability) a session packer that moves exactly that backend's session
// files between machines. It also holds the catalogue of known backend names
// and their capabilities, which graph validation and session resolution read.
package backend

import (
	"context"
	"errors"
	"fmt"
)

// Names of the known backends.
const (
	Scripted   = "scripted"
	ClaudeCode = "claude_code"
	Codex      = "codex"
	Pi         = "pi"
	Kimi       = "kimi"
	Grok       = "grok"
)

// Info is what Tether knows about a backend without running it.
type Info struct {
	Name string
	// Persist reports whether the backend can resume a conversation on
	// another machine: it has a packer and a resume flag.
	Persist bool
}

var catalogue = []Info{
	{Name: Scripted, Persist: true},
	{Name: ClaudeCode, Persist: true},
	{Name: Codex, Persist: true},
	{Name: Pi, Persist: true},
	{Name: Kimi, Persist: false},
	{Name: Grok, Persist: false},
}

// Lookup returns the catalogue entry for name.
func Lookup(name string) (Info, bool) {
	for _, b := range catalogue {
		if b.Name == name {
			return b, true
		}
	}
	return Info{}, false
}

// Known lists every backend name, in catalogue order.
func Known() []string {
	out := make([]string, len(catalogue))
	for i, b := range catalogue {
		out[i] = b.Name
	}
	return out
}

// HasPersist reports whether name is a backend with the persist capability.
func HasPersist(name string) bool {
	b, ok := Lookup(name)
	return ok && b.Persist
}

// Reserved output and input keys. Stamps are set on every agent output;
// SessionStateBlobKey is a transient carrier that is stripped before an
// output is stored anywhere.
const (
	SessionIDKey          = "_session_id"
	BackendKey            = "_backend"
	SessionFingerprintKey = "_session_fingerprint"
	SessionStateKey       = "_session_state"
	SessionStateBlobKey   = "_session_state_blob"
)

// Env is where one visit of an agent node runs: the backend's live state
// root on this worker (CLAUDE_CONFIG_DIR, CODEX_HOME, pi's session dir, the
// scripted agent's root) and the working directory the CLI runs in.
type Env struct {
	StateRoot string
	Workdir   string
}

// Request is one visit of an agent node.
type Request struct {
	RunID  string
	NodeID string
	Visit  int
	Prompt string
	// Input is the visit's input after session resolution: the session
	// keys are present only when the visit resumes that session.
	Input map[string]any
	// SessionID, when set, resumes that conversation; the runtime sets it
	// only after session resolution proved the session is present.
	SessionID string
	// Fork, with SessionID, continues a copy of the conversation under a
	// new id.
	Fork   bool
	Model  string
	Script []string
	// Answer, when set, resumes a visit that asked the user: it is the
	// human's reply to the pending question.
	Answer *Answer
	Env    Env
}

// Answer is a human's reply to a question an agent asked mid-visit.
type Answer struct {
	QuestionID       string
	Text             string
	PendingToolUseID string
}

// Question is something an agent asks the user in the middle of a visit.
type Question struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// Result is what a visit produced.
type Result struct {
	// Text is the agent's final reply.
	Text string
	// Structured is parsed structured output, when the agent gave one.
	Structured map[string]any
	// SessionID is the conversation the visit ran in.
	SessionID string
	// Fingerprint hashes what defines the conversation (backend, model,
	// system prompt, tools, permissions).
	Fingerprint string
	// NeedsInteraction is set when the agent asked the user and the visit
	// must pause; the session files are still live on disk.
	NeedsInteraction *Interaction
}

// Interaction is an in-node ask_user: the visit pauses until answered.
type Interaction struct {
	Questions        []Question
	PendingToolUseID string
}

// Executor runs visits of one backend.
type Executor interface {
	Name() string
	Execute(ctx context.Context, req Request) (Result, error)
}

// SessionPacker moves one backend's session files. It is bound to one live
// Env: HasSession answers for exactly the root and working directory the next
// Execute will use, and the runtime never probes those directories itself.
type SessionPacker interface {
	PackSession(ctx context.Context, sessionID string) ([]byte, error)
	UnpackSession(ctx context.Context, sessionID string, blob []byte) error
	HasSession(ctx context.Context, sessionID string) bool
}

// Backend is a registered backend: an executor and, when it has the persist
// capability, a packer factory.
type Backend interface {
	Executor
	// Packer returns the packer bound to env, or nil when the backend
	// cannot persist.
	Packer(env Env) SessionPacker
}

// Typed failures. The workflow branches on their names (see ErrorType).
var (
	ErrNoSession    = errors.New("backend: no such session")
	ErrNotInstalled = errors.New("backend: CLI not installed")
	ErrExit         = errors.New("backend: CLI exited non-zero")
	ErrTimeout      = errors.New("backend: visit timed out")
	ErrScript       = errors.New("backend: scripted failure")
)

// ErrorType names a typed failure for Temporal application errors.
func ErrorType(err error) string {
	switch {
	case errors.Is(err, ErrNoSession):
		return "NoSession"
	case errors.Is(err, ErrNotInstalled):
		return "NotInstalled"
	case errors.Is(err, ErrExit):
		return "ExitError"
	case errors.Is(err, ErrTimeout):
		return "Timeout"
	case errors.Is(err, ErrScript):
		return "ScriptedFailure"
	default:
		return ""
	}
}

// ExitError carries a CLI's exit code and the tail of its stderr.
type ExitError struct {
	Backend    string
	Code       int
	StderrTail string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s exited with code %d: %s", e.Backend, e.Code, e.StderrTail)
}

// Unwrap makes errors.Is(err, ErrExit) hold.
func (e *ExitError) Unwrap() error { return ErrExit }

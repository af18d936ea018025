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
	"time"
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
	// Implemented reports whether this build has an executor for it.
	Implemented bool
	// NoCost marks a backend whose CLI reports tokens but no price.
	NoCost bool
	// Persist reports whether the backend can resume a conversation on
	// another machine: it has a packer and a resume flag.
	Persist bool
	// Honours lists the agent settings the backend can apply (SettingPermissions,
	// SettingTools, ...); a node that sets another one is refused by graph
	// validation. Env and Timeout every backend honours.
	Honours []string
}

// Names of the agent settings that not every backend can apply, as the
// graph DSL spells them.
const (
	SettingPermissions        = "permissions"
	SettingTools              = "tools"
	SettingDisallowedTools    = "disallowed_tools"
	SettingSystemPrompt       = "system_prompt"
	SettingAppendSystemPrompt = "append_system_prompt"
)

var allSettings = []string{SettingPermissions, SettingTools, SettingDisallowedTools, SettingSystemPrompt, SettingAppendSystemPrompt}

var catalogue = []Info{
	// The scripted agent has no tools to limit; it takes every setting into
	// its fingerprint, so that a dry run behaves like the real backend.
	{Name: Scripted, Implemented: true, Persist: true, Honours: allSettings},
	{Name: ClaudeCode, Implemented: true, Persist: true, Honours: allSettings},
	// Codex has no tool allowlist or denylist: its tools come from its
	// features and sandbox, not from names.
	{Name: Codex, Implemented: true, Persist: true, NoCost: true, Honours: []string{SettingPermissions, SettingSystemPrompt, SettingAppendSystemPrompt}},
	{Name: Pi, Implemented: true, Persist: true, Honours: allSettings},
	// Known to ADR-089 as backends without the persist capability; this
	// build has no executor for them, so a graph naming them is refused
	// (G046) instead of failing at run time.
	{Name: Kimi, Persist: false},
	{Name: Grok, Persist: false},
}

// ReportsCost reports whether a backend's visits come with a price.
func ReportsCost(name string) bool {
	b, ok := Lookup(name)
	return ok && b.Implemented && !b.NoCost
}

// Implemented lists the backends this build can run, in catalogue order.
func Implemented() []string {
	var out []string
	for _, b := range catalogue {
		if b.Implemented {
			out = append(out, b.Name)
		}
	}
	return out
}

// Honours reports whether backend name can apply the agent setting.
func Honours(name, setting string) bool {
	b, ok := Lookup(name)
	if !ok {
		return false
	}
	for _, s := range b.Honours {
		if s == setting {
			return true
		}
	}
	return false
}

// Permission levels of an agent node: what the agent may do unattended.
// Each backend maps them onto its CLI's own controls (docs/backends.md).
const (
	// PermissionReadOnly lets the agent read the working directory but
	// never change it.
	PermissionReadOnly = "read-only"
	// PermissionEdit adds writing and editing files in the working
	// directory.
	PermissionEdit = "edit"
	// PermissionFull lets the agent do anything, shell commands included,
	// without a sandbox.
	PermissionFull = "full"
)

// Permissions lists the permission levels, from least to most.
func Permissions() []string { return []string{PermissionReadOnly, PermissionEdit, PermissionFull} }

// Settings is what an agent node says its agent may do and how it is
// instructed. Every field is optional: an empty one keeps the executor's
// worker-wide default, and a set one overrides it.
type Settings struct {
	// Permissions is one of the Permission* levels, or "".
	Permissions string
	// Tools is an allowlist and DisallowedTools a denylist of the
	// backend's own tool names; nil keeps the default.
	Tools, DisallowedTools []string
	// SystemPrompt replaces the backend's system prompt;
	// AppendSystemPrompt is added to it.
	SystemPrompt, AppendSystemPrompt string
	// Env names worker environment variables passed on to the agent's
	// process (names only: the values are the worker's).
	Env []string
	// Timeout bounds the visit; zero keeps the executor's.
	Timeout time.Duration
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
	// Settings are the node's agent settings, over the executor's
	// worker-wide defaults.
	Settings Settings
	// Progress, when set, is called with what the visit has done so far
	// each time the executor learns more (a tool call, reply text, token
	// counts), from the goroutine that reads the CLI's output. It must
	// return quickly.
	Progress func(Progress)
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
	// Usage is what this visit alone cost (never the conversation's
	// earlier visits), also when it asked the user.
	Usage Usage
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
	// Fingerprint is the fingerprint a visit of req will run under, known
	// before it runs: the node's settings over the executor's defaults,
	// the model, and whatever else changes what the model sees or may do
	// (never env names, timeouts, endpoints or keys). Execute reports the
	// same value in Result.Fingerprint.
	Fingerprint(req Request) string
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

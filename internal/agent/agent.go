// Package agent is the contract between Tether and an agent backend: what
// one visit of an agent node asks for (Request), what it produced (Result),
// what a backend is (Executor, SessionPacker, Backend), its typed failures,
// and the reserved keys a visit stamps on its output. It sits at the bottom
// of Tether's packages and imports none of them: the backends, the session
// packer, the activities and the workflow all speak it.
package agent

import "context"

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
	// Limits are the budgets the visit counts against. A backend whose
	// model calls go through the worker's model relay refuses the next
	// call once one of them is spent, and the visit ends there
	// (Result.BudgetStop).
	Limits []Limit
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
	// earlier visits), also when it asked the user. Where the worker's
	// model relay carried the visit's model calls, each token count is at
	// least what the relay read in the model's answers (Metered): a CLI
	// that stopped on an error may report less than it spent.
	Usage Usage
	// Metered is what the worker's model relay read in the model's
	// answers during the visit (tokens only: the relay knows no prices);
	// zero when no relay carried them.
	Metered Usage
	// BudgetStop, when set, says which budget was spent mid-visit: the
	// relay refused the CLI's next model call and the visit ended there.
	// The session on disk holds the conversation up to that call, and the
	// visit is otherwise a finished one (its text so far, its usage, its
	// files), which the run stops after, resumably.
	BudgetStop string
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

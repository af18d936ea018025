package cliexec

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/packer"
)

// Executor is a CLI backend: the visit every CLI runs alike (check the
// request, start the visit, prepare the CLI, run it, read its output,
// turn a failure into the typed error, fill the result, read the
// ask_user record, apply the reply convention), around a Driver that
// does only what is its CLI's own (flags, environment, files it needs,
// how it prints a turn). The executors of internal/backend/<name> are
// Executors with their own Driver.
type Executor struct {
	CLI    CLI
	Driver Driver
	// Layout is where the CLI keeps a session (the backend's packer
	// derives pack, unpack and HasSession from it); nil for a CLI that
	// keeps none, which then has no persist capability.
	Layout packer.Layout
	// Convention turns the ask_user reply convention on (AskedQuestions):
	// for a CLI that cannot call Tether's ask_user tool.
	Convention bool
}

// Driver is one CLI's part of a visit.
type Driver interface {
	// Conversation is what defines the conversation a visit of req runs:
	// the fields of its fingerprint.
	Conversation(c *CLI, req agent.Request) Conversation
	// Launch prepares visit v of req (files the CLI reads, a session to
	// import or fork) and says how to run the CLI. It runs after the
	// visit's scratch directory exists, before the CLI starts.
	Launch(ctx context.Context, c *CLI, req agent.Request, v *Visit) (Launch, error)
}

// Launch is how a visit runs its CLI, as its Driver prepared it.
type Launch struct {
	Args []string
	// Env are the variables the driver sets; the CLI's environment is
	// CLI.Environ of them (the base, the passed names, HOME, Options.Env).
	Env []string
	// PromptInArgs: the prompt is in Args, and stdin stays empty.
	PromptInArgs bool
	// ReadOnlyDir keeps a confined CLI's working directory read-only.
	ReadOnlyDir bool
	// Output reads the CLI's stdout.
	Output Output
	// Gone reports, after a failed resume, whether the CLI said the
	// session does not exist (its stderr tail); nil: it never says.
	Gone func(stderr string) bool
}

// Output reads what the CLI prints, line by line, and says what the
// visit came to once the CLI has exited.
type Output interface {
	Line(b []byte)
	Report() Report
}

// Report is what the CLI's output said about a visit.
type Report struct {
	SessionID string
	Text      string
	Usage     agent.Usage
	// AskUserID is the tool-use id of the ask_user call the output showed
	// ("": none, or the CLI does not show it; the record's is used then).
	AskUserID string
	// Failure is what the CLI reported as its failure; Failed marks a
	// visit that failed although the CLI exited normally.
	Failure string
	Failed  bool
	// Err fails the visit with itself: what reading the CLI's files hit
	// (agent.ErrUnsafeFile), whatever the CLI did.
	Err error
}

// Checker is a Driver that checks more of the session a request resumes,
// once the executor found its main file, before anything is made for the
// visit.
type Checker interface {
	CheckSession(ctx context.Context, c *CLI, req agent.Request) error
}

// Finisher is a Driver with work after a run that reached a session
// (written before the result is returned, also when the visit asks the
// user): opencode exports the session it packs.
type Finisher interface {
	Finish(ctx context.Context, c *CLI, req agent.Request, v *Visit, sessionID string) error
}

var _ agent.Backend = (*Executor)(nil)

// New returns the executor of backend f (its facts name it and its
// program) running its CLI with the common options o and driver d, its
// sessions where layout says (nil: it keeps none). convention turns the
// ask_user reply convention on, in place of the ask_user MCP tool, which
// only a CLI whose facts say it has an MCP client (agent.Facts.MCP) is
// given.
func New(f agent.Facts, o Options, d Driver, layout packer.Layout, convention bool) *Executor {
	if !f.MCP || convention {
		o.AskUser = nil
	}
	return &Executor{CLI: CLI{Options: o, Backend: f.Name, Bin: f.CLI, Facts: f}, Driver: d, Layout: layout, Convention: convention}
}

// Name is the backend's name.
func (e *Executor) Name() string { return e.CLI.Backend }

// Available reports whether the CLI is installed on this worker.
func (e *Executor) Available() error { return e.CLI.Available() }

// Packer returns the backend's session packer bound to env, or nil for a
// CLI that keeps no session.
func (e *Executor) Packer(env agent.Env) agent.SessionPacker {
	if e.Layout == nil {
		return nil
	}
	return packer.New(e.CLI.Backend, env, packer.DefaultLimits(), e.Layout, e.CLI.PackerOptions()...)
}

// Fingerprint hashes what defines the conversation a visit of req runs
// (see Conversation for the fields).
func (e *Executor) Fingerprint(req agent.Request) string {
	c := e.Driver.Conversation(&e.CLI, req)
	c.Backend = e.CLI.Backend
	return Fingerprint(c)
}

// Execute runs one visit.
func (e *Executor) Execute(ctx context.Context, req agent.Request) (agent.Result, error) {
	var res agent.Result
	if err := e.CLI.Check(req); err != nil {
		return res, err
	}
	if req.SessionID != "" && e.Layout == nil {
		// Resolution never plans a resume on a backend without persist.
		return res, fmt.Errorf("%w: %s cannot resume a conversation (%s)", agent.ErrNoSession, e.CLI.Backend, req.SessionID)
	}
	if req.SessionID != "" {
		// Before Begin makes the state root and the scratch directory,
		// and before the CLI reads anything of it: the session's main file
		// is there, and a plain file (the agent of an earlier visit could
		// have put a link to a secret or to /dev/zero in its place).
		if _, err := packer.New(e.CLI.Backend, req.Env, packer.DefaultLimits(), e.Layout).SessionFile(ctx, req.SessionID); err != nil {
			return res, NoSession(e.CLI.Backend, req.SessionID, err)
		}
		if c, ok := e.Driver.(Checker); ok {
			if err := c.CheckSession(ctx, &e.CLI, req); err != nil {
				return res, err
			}
		}
	}
	visit, err := e.CLI.Begin(req)
	if err != nil {
		return res, err
	}
	defer visit.Close()
	route, err := e.relay(ctx, &req, visit)
	if err != nil {
		return res, err
	}
	defer route.close()
	l, err := e.Driver.Launch(ctx, &e.CLI, req, visit)
	if err != nil {
		return res, err
	}
	spec := e.CLI.Spec(ctx, req, visit)
	spec.Args, spec.Env, spec.OnLine, spec.ReadOnlyDir = l.Args, route.environ(e.CLI.Environ(req, l.Env...)), l.Output.Line, l.ReadOnlyDir
	if route != nil {
		spec.Model, spec.ModelEndpoints = route.in, nil
		spec.Stop = either(spec.Stop, route.stop(BudgetGrace))
	}
	if l.PromptInArgs {
		spec.Stdin = ""
	}
	out, runErr := Run(ctx, spec)
	rep := l.Output.Report()
	if rep.Err != nil {
		return res, fmt.Errorf("%s: %w", e.CLI.Backend, rep.Err)
	}
	metered := route.usage()
	stopped := route.stopped()
	if runErr != nil && (stopped == "" || ctx.Err() != nil) {
		if req.SessionID != "" && l.Gone != nil && l.Gone(out.StderrTail) {
			return res, fmt.Errorf("%w: %s session %s is not in %s (working directory %s): %s",
				agent.ErrNoSession, e.CLI.Backend, req.SessionID, req.Env.StateRoot, req.Env.Workdir, firstLine(out.StderrTail))
		}
		return res, ReportFailure(runErr, rep.Failure)
	}
	res = agent.Result{SessionID: rep.SessionID, Fingerprint: e.Fingerprint(req), Text: rep.Text,
		Usage: withMetered(rep.Usage, metered), Metered: metered}
	ask, err := visit.Interaction(rep.AskUserID)
	if err != nil {
		return res, fmt.Errorf("%s: %w", e.CLI.Backend, err)
	}
	if ask != nil {
		if err := e.finish(ctx, req, visit, res.SessionID); err != nil {
			return res, err
		}
		res.NeedsInteraction = ask
		return res, nil
	}
	if stopped != "" {
		// The relay refused the next model call: the visit ends here,
		// a finished one whatever the CLI made of the refusal, with the
		// session as far as it got.
		res.BudgetStop = stopped
		if res.SessionID != "" {
			if err := e.finish(ctx, req, visit, res.SessionID); err != nil {
				return res, err
			}
		}
		return res, nil
	}
	if rep.Failed {
		return res, &agent.ExitError{Backend: e.CLI.Backend, Code: out.ExitCode,
			StderrTail: strings.TrimSpace(rep.Failure + "\n" + out.StderrTail)}
	}
	if res.SessionID == "" && e.Layout != nil {
		return res, fmt.Errorf("%s: the CLI reported no session id (stderr: %s)", e.CLI.Backend, out.StderrTail)
	}
	if err := e.finish(ctx, req, visit, res.SessionID); err != nil {
		return res, err
	}
	FinishReply(&res, e.Convention && Asks(req))
	return res, nil
}

// relay starts the visit's model relay, which holds the key and counts
// the calls against req's budgets: v gets the relay's address and a
// placeholder for the CLI, and req's progress the relay's token count as
// it grows. A nil route leaves the CLI its own endpoint and no key.
func (e *Executor) relay(ctx context.Context, req *agent.Request, v *Visit) (*modelRoute, error) {
	live := &liveUsage{report: req.Progress, last: agent.Progress{Node: req.NodeID, Visit: req.Visit, Backend: e.CLI.Backend}}
	if live.report == nil {
		live.report = func(agent.Progress) {}
	}
	req.Progress = live.progress
	route, err := e.CLI.route(ctx, *req, live.usage)
	if err != nil || route == nil {
		return nil, err
	}
	v.BaseURL, v.APIKey = route.baseURL, route.key
	live.mu.Lock()
	live.priced = route.setCost
	live.mu.Unlock()
	return route, nil
}

func (e *Executor) finish(ctx context.Context, req agent.Request, v *Visit, id string) error {
	if f, ok := e.Driver.(Finisher); ok && id != "" {
		return f.Finish(ctx, &e.CLI, req, v, id)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// NoSession turns the packer's word that a session is missing into
// agent.ErrNoSession, a link or special file in its place into
// agent.ErrUnsafeFile, and any other failure to find it into an error of
// the backend: what a Checker returns.
func NoSession(backendName, id string, err error) error {
	switch {
	case errors.Is(err, packer.ErrNoSession):
		return fmt.Errorf("%w: %v", agent.ErrNoSession, err)
	case errors.Is(err, packer.ErrLinkEntry), errors.Is(err, packer.ErrSpecialEntry), errors.Is(err, packer.ErrExists):
		// The agent put something else where its session file goes.
		return fmt.Errorf("%w: %s session %s: %v", agent.ErrUnsafeFile, backendName, id, err)
	}
	return fmt.Errorf("%s: find session %s: %w", backendName, id, err)
}

// either is a Stop that is true once a or b is (nil: never).
func either(a, b func() bool) func() bool {
	if a == nil {
		return b
	}
	return func() bool { return a() || b() }
}

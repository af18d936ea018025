package agent

import (
	"errors"
	"fmt"
)

// Typed failures of a visit. The workflow branches on their names (see
// ErrorType). Their messages keep the "backend:" prefix they have always
// had: they name what failed, a backend.
var (
	ErrNoSession    = errors.New("backend: no such session")
	ErrNotInstalled = errors.New("backend: CLI not installed")
	ErrExit         = errors.New("backend: CLI exited non-zero")
	ErrTimeout      = errors.New("backend: visit timed out")
	ErrScript       = errors.New("backend: scripted failure")
	// ErrUnsafeFile: a file the worker reads from where the agent could
	// write (its ask_user record, a session or rollout file, an export)
	// is a link, not a regular file, or over its size cap
	// (internal/untrusted). The visit fails; the worker goes on.
	ErrUnsafeFile = errors.New("backend: a file the agent could write is not one the worker reads")
	// ErrPathRefused: the sandbox will not run the program (named
	// through "..", or leading outside where a confined program may come
	// from) or give a path the process asks for (internal/sandbox). The
	// visit fails before anything starts; the worker goes on.
	ErrPathRefused = errors.New("backend: a path the sandbox refuses")
)

// errorTypes name the typed failures, the first that matches winning.
var errorTypes = []struct {
	err  error
	name string
}{
	{ErrNoSession, "NoSession"},
	{ErrNotInstalled, "NotInstalled"},
	{ErrExit, "ExitError"},
	{ErrTimeout, "Timeout"},
	{ErrScript, "ScriptedFailure"},
	{ErrUnsafeFile, "UnsafeFile"},
	{ErrPathRefused, "PathRefused"},
}

// ErrorType names a typed failure for Temporal application errors.
func ErrorType(err error) string {
	for _, t := range errorTypes {
		if errors.Is(err, t.err) {
			return t.name
		}
	}
	return ""
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

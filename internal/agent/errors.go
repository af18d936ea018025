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

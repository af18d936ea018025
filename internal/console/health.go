package console

import "github.com/tether-run/tether/internal/health"

// downError is Temporal unreachable: serveError shows it as such (503),
// with nothing read from the run store alone, which could be stale.
type downError struct{ msg string }

func (e *downError) Error() string { return e.msg }

// temporalDown is the error of a page that found Temporal unreachable.
func temporalDown(rep health.Report) error { return &downError{rep.String()} }

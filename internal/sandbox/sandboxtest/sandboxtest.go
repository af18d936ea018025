// Package sandboxtest gives tests the worker's sandbox as a production
// worker builds it: the small confine helper (tether-confine, built once
// per version of its sources) under bubblewrap, with every namespace,
// Landlock, seccomp and the egress proxy. A machine without them fails the
// test under CI=true and skips it elsewhere.
package sandboxtest

import (
	"context"
	"sync"
	"testing"

	"github.com/tether-run/tether/internal/egress"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/testenv"
)

var (
	mu     sync.Mutex
	helper string
)

// Helper is the path of tether-confine, built from this checkout into a
// directory every user can read (the tests run workers as uid 65534 too).
func Helper(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if helper != "" {
		return helper
	}
	helper = testenv.BuildCommand(t, "confine helper", "internal/sandbox/cmd/tether-confine", "internal/sandbox/confine")
	return helper
}

// Option changes the sandbox New builds.
type Option func(*sandbox.Config)

// WithServices declares the worker's own services, which no confined
// process may reach.
func WithServices(s ...egress.Service) Option {
	return func(c *sandbox.Config) { c.Services = append(c.Services, s...) }
}

// WithRO adds paths every confined process may read.
func WithRO(paths ...string) Option {
	return func(c *sandbox.Config) { c.RO = append(c.RO, paths...) }
}

// WithLimits sets the limits of a node that sets none (the worker's
// defaults).
func WithLimits(l sandbox.Limits) Option {
	return func(c *sandbox.Config) { c.Limits = l }
}

// New is the full sandbox with the small helper, closed when the test
// ends.
func New(t testing.TB, opts ...Option) *sandbox.Sandbox {
	t.Helper()
	cfg := sandbox.Config{Mode: sandbox.ModeFull, Helper: []string{Helper(t)}}
	for _, o := range opts {
		o(&cfg)
	}
	sb, err := sandbox.New(context.Background(), cfg)
	if err != nil {
		testenv.Unavailable(t, "the full sandbox: %v", err)
		return nil
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

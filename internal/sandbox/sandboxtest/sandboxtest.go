// Package sandboxtest gives tests the worker's sandbox as a production
// worker builds it: the small confine helper (tether-confine, built once
// per version of its sources) under bubblewrap, with every namespace,
// Landlock, seccomp and the egress proxy. A machine without them fails the
// test under CI=true and skips it elsewhere.
package sandboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/tether-run/tether/internal/egress"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/testenv"
)

// startEnv is the environment before any test changed HOME, so that the
// build uses the developer's Go caches.
var startEnv = os.Environ()

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
	root := testenv.Root()
	h := sha256.New()
	io.WriteString(h, runtime.Version())
	srcs, _ := filepath.Glob(filepath.Join(root, "internal", "sandbox", "confine", "*.go"))
	srcs = append(srcs, filepath.Join(root, "internal", "sandbox", "cmd", "tether-confine", "main.go"),
		filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
	for _, f := range srcs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("hash the confine helper's sources: %v", err)
		}
		h.Write(b)
	}
	dir := filepath.Join(os.TempDir(), "tether-confine-"+hex.EncodeToString(h.Sum(nil))[:16])
	bin := filepath.Join(dir, "tether-confine")
	if _, err := os.Stat(bin); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(dir, 0o755)
		tmp, err := os.CreateTemp(dir, ".build-*")
		if err != nil {
			t.Fatal(err)
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		cmd := exec.Command("go", "build", "-o", tmp.Name(), "./internal/sandbox/cmd/tether-confine")
		cmd.Dir = root
		cmd.Env = startEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build the confine helper: %v\n%s", err, out)
		}
		if err := os.Chmod(tmp.Name(), 0o755); err != nil {
			t.Fatal(err)
		}
		// Rename, so that a concurrent test binary never runs a
		// half-written file.
		if err := os.Rename(tmp.Name(), bin); err != nil {
			t.Fatal(err)
		}
	}
	helper = bin
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

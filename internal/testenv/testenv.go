// Package testenv gives tests the real programs they run against (the
// Temporal CLI, versitygw, the agent CLIs) and enforces the project's rule
// for missing ones: when CI=true a test whose real dependency is missing
// fails; elsewhere it skips with the command that would install it.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// CI reports whether the tests run under CI (CI=true).
func CI() bool { return os.Getenv("CI") == "true" }

// Root returns the module root (the directory holding go.mod).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Unavailable fails the test under CI and skips it elsewhere.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf("real dependency missing under CI=true: "+format, args...)
	}
	t.Skipf("real dependency missing (set CI=true to make this a failure): "+format, args...)
}

// toolCache is scripts/tools.sh's cache as the environment named it when
// the test binary started.
var toolCache = func() string {
	if c := os.Getenv("TETHER_CACHE"); c != "" {
		return c
	}
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "tether")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "tether")
}()

var (
	toolMu    sync.Mutex
	toolPaths = map[string]string{}
)

// Tool returns the path of a real program that scripts/tools.sh provides
// ("temporal", "versitygw"), building it into the version cache on first use.
func Tool(t testing.TB, name string) string {
	t.Helper()
	toolMu.Lock()
	defer toolMu.Unlock()
	if p, ok := toolPaths[name]; ok {
		return p
	}
	cmd := exec.Command("bash", filepath.Join(Root(), "scripts", "tools.sh"), name)
	// Tests move HOME to keep the CLIs off the real one; the tool cache
	// stays where it was when the test binary started.
	cmd.Env = append(os.Environ(), "TETHER_CACHE="+toolCache)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		Unavailable(t, "scripts/tools.sh %s: %v\n%s", name, err, stderr)
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	p := lines[len(lines)-1]
	toolPaths[name] = p
	return p
}

// CLIBin returns the directory holding the npm agent CLIs (claude, codex,
// pi), installing the pinned versions on first use.
func CLIBin(t testing.TB) string {
	return Tool(t, "clis")
}

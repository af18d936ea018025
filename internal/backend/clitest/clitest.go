// Package clitest holds what the real-CLI backend tests share: an isolated
// environment per test (fresh HOME, empty state root and working
// directory), the agent CLIs' bin directory, and the ask_user MCP server
// built once per test binary.
package clitest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/testenv"
)

// Isolate points HOME (and XDG dirs) at a fresh temp dir for the rest of the
// test, so that no CLI reads or writes the real ~/.claude, ~/.codex or
// ~/.pi, and returns the CLIs' bin directory (testenv.CLIBin).
func Isolate(t *testing.T) string {
	t.Helper()
	bin := testenv.CLIBin(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	return bin
}

// NewEnv returns an empty state root and an empty working directory.
func NewEnv(t *testing.T) backend.Env {
	t.Helper()
	base := t.TempDir()
	env := backend.Env{StateRoot: filepath.Join(base, "root"), Workdir: filepath.Join(base, "work")}
	for _, d := range []string{env.StateRoot, env.Workdir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

// startEnv is the environment before any test changed HOME, so that the
// build below uses the developer's Go caches instead of a cold empty one.
var startEnv = os.Environ()

var (
	askOnce sync.Once
	askBin  string
	askErr  error
	askOut  []byte
)

// AskUserCommand builds the ask_user MCP server (cmd/tether-ask-user) once
// per test binary and returns the argv base an executor's AskUser option
// takes. The binary lives in a temp dir that the OS reclaims; Cleanup
// removes it at the end of TestMain when the package calls it.
func AskUserCommand(t testing.TB) []string {
	t.Helper()
	askOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tether-ask-user-*")
		if err != nil {
			askErr = err
			return
		}
		askBin = filepath.Join(dir, "tether-ask-user")
		gobin := "go"
		cmd := exec.Command(gobin, "build", "-o", askBin, "./internal/askuser/cmd/tether-ask-user")
		cmd.Dir = testenv.Root()
		cmd.Env = startEnv
		askOut, askErr = cmd.CombinedOutput()
	})
	if askErr != nil {
		t.Fatalf("build the ask_user MCP server: %v\n%s", askErr, askOut)
	}
	return []string{askBin}
}

// Cleanup removes what AskUserCommand built; call it from TestMain after
// m.Run.
func Cleanup() {
	if askBin != "" {
		_ = os.RemoveAll(filepath.Dir(askBin))
	}
}

// Processes returns the pids of live processes whose command line contains
// substr (for checking that a killed visit left nothing behind).
func Processes(substr string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid := 0
		for _, c := range e.Name() {
			if c < '0' || c > '9' {
				pid = -1
				break
			}
			pid = pid*10 + int(c-'0')
		}
		if pid <= 0 || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(substr)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && bytes.Contains(st, []byte(") Z ")) {
			continue // a zombie is already dead
		}
		pids = append(pids, pid)
	}
	return pids
}

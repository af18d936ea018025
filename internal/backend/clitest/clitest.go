// Package clitest holds what the real-CLI backend tests share: an isolated
// environment per test (fresh HOME, empty state root and working
// directory), the agent CLIs' bin directory, and the ask_user MCP server
// built once per version of its sources.
package clitest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
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
func NewEnv(t *testing.T) agent.Env {
	t.Helper()
	base := t.TempDir()
	env := agent.Env{StateRoot: filepath.Join(base, "root"), Workdir: filepath.Join(base, "work")}
	for _, d := range []string{env.StateRoot, env.Workdir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

var (
	askMu  sync.Mutex
	askBin string
)

// AskUserCommand returns the argv base an executor's AskUser option takes:
// the ask_user MCP server built from cmd/tether-ask-user. The binary is
// cached in the system temp dir under a key of its sources and the Go
// version, so test binaries share one build and nothing piles up.
func AskUserCommand(t testing.TB) []string {
	t.Helper()
	askMu.Lock()
	defer askMu.Unlock()
	if askBin != "" {
		return []string{askBin}
	}
	askBin = testenv.BuildCommand(t, "ask_user MCP server", "internal/askuser/cmd/tether-ask-user", "internal/askuser")
	return []string{askBin}
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

// WaitGone waits until no live process mentions substr. A killed group
// takes the kernel a moment to tear down, longer on a busy machine; the
// test fails only after a minute, far beyond that, with the survivors.
func WaitGone(t testing.TB, substr, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		left := Processes(substr)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s survived its kill by a minute: pids %v", what, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Argv is the command line executor e launches a visit with settings s
// in (state root /r, working directory /w), for tests of the argv an
// executor builds. The visit's scratch files it names stay until the test
// ends.
func Argv(t *testing.T, e *cliexec.Executor, s agent.Settings) []string {
	t.Helper()
	v, err := cliexec.NewVisit(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(v.Close)
	l, err := e.Driver.Launch(context.Background(), &e.CLI, agent.Request{Settings: s, Env: agent.Env{StateRoot: "/r", Workdir: "/w"}}, v)
	require.NoError(t, err)
	return l.Args
}

// Flag returns the argument after name in argv, and whether name is there
// with one, for tests of the argv an executor builds.
func Flag(argv []string, name string) (string, bool) {
	for i, a := range argv {
		if a == name && i+1 < len(argv) {
			return argv[i+1], true
		}
	}
	return "", false
}

// DistinctFingerprints checks that each of settings gives b's visits a
// fingerprint of its own, different from no settings and from every other
// entry, while env names and a timeout change nothing.
func DistinctFingerprints(t *testing.T, b agent.Backend, settings map[string]agent.Settings) map[string]string {
	t.Helper()
	base := b.Fingerprint(agent.Request{})
	if got := b.Fingerprint(agent.Request{Settings: agent.Settings{Env: []string{"X"}, Timeout: time.Minute}}); got != base {
		t.Errorf("env names and a timeout changed the fingerprint")
	}
	seen := map[string]string{"none": base}
	for name, s := range settings {
		fp := b.Fingerprint(agent.Request{Settings: s})
		for other, ofp := range seen {
			if ofp == fp {
				t.Errorf("settings %s and %s give the same fingerprint", name, other)
			}
		}
		seen[name] = fp
	}
	return seen
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
)

// tether-worker says at start which confinement is in force: here the
// full sandbox with its helper beside it; on a machine without bubblewrap
// (PATH without it) Landlock alone, with the nodes it will refuse, and
// with TETHER_SANDBOX=full it refuses to start. A CLI bin directory in a
// home stops it too.
func TestWorkerSaysWhatItConfines(t *testing.T) {
	dir := t.TempDir()
	bin := buildWorker(t, dir)
	helper, err := os.ReadFile(sandboxtest.Helper(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tether-confine"), helper, 0o755))

	// The worker stops at its first call to Temporal, which nothing
	// answers: what it said before that is its start.
	start := func(env ...string) string {
		cmd := exec.Command(bin)
		cmd.Env = append(append(os.Environ(), "TEMPORAL_ADDRESS=127.0.0.1:1", "TETHER_HOME="+t.TempDir(), "TETHER_CLI_BIN="), env...)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	log := start()
	assert.Contains(t, log, `msg="agents and tools are confined" sandbox="namespaces (bubblewrap) + landlock + seccomp + egress proxy`)
	assert.Contains(t, log, "helper="+filepath.Join(dir, "tether-confine"), "the small helper beside the worker")

	path := "PATH=" + t.TempDir() // no bubblewrap on it
	log = start(path)
	assert.Contains(t, log, "less than the full sandbox")
	assert.Contains(t, log, "nodes with permissions: full or a network: setting are refused")
	assert.Contains(t, log, "bubblewrap (bwrap) is not installed")

	log = start(path, "TETHER_SANDBOX=full")
	assert.Contains(t, log, "TETHER_SANDBOX=full needs user namespaces, bubblewrap")
	assert.NotContains(t, log, "connect to Temporal", "it refused to start")

	log = start("TETHER_CLI_BIN=/root/.local/bin")
	assert.Contains(t, log, "is inside the home directory /root")
	assert.False(t, strings.Contains(log, "connect to Temporal"), "it refused to start")
}

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A signal the worker sends a confined program reaches it through the
// helper, the first process of its namespaces: bubblewrap itself does not
// pass signals on, and dies of most.
func TestSignalReachesTheProgram(t *testing.T) {
	sb := full(t)
	l, err := sb.Launch(Policy{}, "/bin/sh", []string{"-c", `trap 'echo got-term; exit 0' TERM; echo ready; while :; do sleep 0.05; done`}, []string{"PATH=/usr/bin:/bin"}, nil)
	require.NoError(t, err)
	defer l.Finish()
	outPath := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(outPath)
	require.NoError(t, err)
	defer f.Close()
	cmd := newCmd(l)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(t, cmd.Start())
	l.Started()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	read := func() string { b, _ := os.ReadFile(outPath); return string(b) }
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(read(), "ready") {
		require.True(t, time.Now().Before(deadline), "the program never started: %s", read())
		time.Sleep(10 * time.Millisecond)
	}
	require.True(t, l.Signal(syscall.SIGTERM), "the helper is ready once the program runs")
	select {
	case err := <-done:
		require.NoError(t, err, read())
		assert.Contains(t, read(), "got-term")
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatal("SIGTERM did not end the program")
	}
}

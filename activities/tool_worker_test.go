package activities

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
)

// toolWorkerEnv, in the environment of this test binary, makes
// TestToolDiesWithTheWorker play the worker: it runs the program the
// variable names as a tool node, which never ends on its own.
const toolWorkerEnv = "TETHER_TEST_TOOL_WORKER"

// A tool node's process dies with its worker: a worker killed in the
// middle of a tool (SIGKILL, the OOM killer) leaves no tool running on the
// machine, as it leaves no agent CLI.
func TestToolDiesWithTheWorker(t *testing.T) {
	if prog := os.Getenv(toolWorkerEnv); prog != "" {
		a := newActs(t, blob.NewMem())
		tool := graph.Node{ID: "t", Kind: graph.KindTool, Run: []string{prog, "300"}}
		_, err := a.RunTool(context.Background(), &ToolRequest{RunID: "r1", NodeID: "t", Node: tool})
		t.Fatalf("the tool ended while its worker lived: %v", err)
	}
	// The tool is sleep under a name of its own, so that its process can
	// be told from any other.
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	body, err := os.ReadFile(sleep)
	require.NoError(t, err)
	prog := filepath.Join(t.TempDir(), fmt.Sprintf("tether-tool-%d", time.Now().UnixNano()))
	require.NoError(t, os.WriteFile(prog, body, 0o755))

	worker := exec.Command(os.Args[0], "-test.run=^TestToolDiesWithTheWorker$", "-test.count=1")
	worker.Env = append(os.Environ(), toolWorkerEnv+"="+prog)
	require.NoError(t, worker.Start())
	t.Cleanup(func() {
		_ = worker.Process.Kill()
		_ = worker.Wait()
		for _, pid := range clitest.Processes(prog) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	waitFor(t, "the tool to start", func() bool { return len(clitest.Processes(prog)) == 1 })

	require.NoError(t, worker.Process.Signal(syscall.SIGKILL))
	_ = worker.Wait()
	waitFor(t, "the tool to die with its worker", func() bool { return len(clitest.Processes(prog)) == 0 })
}

// waitFor polls cond until it holds; it fails the test after a minute, far
// beyond what the kernel takes, so that a slow machine never fails it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

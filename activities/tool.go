package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/graph"
)

// tailBytes is how much of a tool's stdout and stderr its output keeps.
const tailBytes = 4096

// RunTool runs a tool node's argv in the run's working directory. It is the
// tool activity of runs recorded before one-trip visits (see Visit).
func (a *Activities) RunTool(ctx context.Context, req *ToolRequest) (map[string]any, error) {
	env, err := a.liveEnv("tool", req.RunID, req.Node)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
	}
	return a.runTool(ctx, req.Node, req.Visit, req.Input, nil, env.Workdir)
}

// runTool runs a tool node's argv in dir. Each argv element is a template
// over the node's input (like a prompt). The output is the exit code and
// the tails of stdout and stderr; a non-zero exit is an output, not a
// failure, because a tool oracle's verdict is its exit code. A timeout
// kills the whole process group.
func (a *Activities) runTool(ctx context.Context, node graph.Node, visit int, input, ws map[string]any, dir string) (map[string]any, error) {
	if len(node.Run) == 0 {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool node %q has no run argv", node.ID), ErrTypeBadRequest, nil)
	}
	argv := make([]string, len(node.Run))
	for i, arg := range node.Run {
		s, err := graph.RenderPrompt(arg, graph.PromptData{Input: input, Visit: visit, Workspace: ws})
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool node %q: argument %d: %v", node.ID, i, err), ErrTypeBadRequest, err)
		}
		argv[i] = s
	}
	timeout := time.Duration(node.Timeout)
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	// The tool sees the same minimal environment as an agent CLI, plus the
	// names its node and the worker's TETHER_PASS_ENV pass: never the
	// worker's secrets by default.
	cmd.Env = cliexec.Environ(append(cliexec.WorkerPassEnv(), node.Env...))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr tail
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	stop := a.heartbeat(ctx)
	started := time.Now()
	err := cmd.Run()
	stop()

	out := map[string]any{
		"exit_code":   0,
		"stdout":      stdout.String(),
		"stderr":      stderr.String(),
		"timed_out":   false,
		"duration_ms": time.Since(started).Milliseconds(),
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		out["exit_code"] = -1
		out["timed_out"] = true
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &exitErr):
		out["exit_code"] = exitErr.ExitCode()
	case errors.Is(err, exec.ErrNotFound):
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool node %q: %q is not installed on this worker", node.ID, argv[0]), ErrTypeBadRequest, err)
	default:
		return nil, fmt.Errorf("tool node %q: %w", node.ID, err)
	}
	return out, nil
}

// tail keeps the last tailBytes written to it.
type tail struct{ buf []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - tailBytes; over > 0 {
		t.buf = append([]byte(nil), t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string { return string(bytes.ToValidUTF8(t.buf, []byte("?"))) }

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
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
	ctx, confined, err := a.confineVisit(ctx, req.Node)
	if err != nil {
		return nil, err
	}
	out, err := a.runTool(ctx, req.Node, req.Visit, req.Input, nil, env.Workdir, nil)
	noteRefused(out, confined)
	return out, err
}

// runTool runs a tool node's argv in dir. Each argv element is a template
// over the node's input (like a prompt). The output is the exit code and
// the tails of stdout and stderr; a non-zero exit is an output, not a
// failure, because a tool oracle's verdict is its exit code. A timeout
// kills the whole process group. When earlier attempts of the visit were
// interrupted (lost), the command finds agent.RetryOfEnv set.
func (a *Activities) runTool(ctx context.Context, node graph.Node, visit int, input, ws map[string]any, dir string, lost *agent.Interruption) (map[string]any, error) {
	if len(node.Run) == 0 {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool node %q has no run argv", node.ID), ErrTypeBadRequest, nil)
	}
	argv := make([]string, len(node.Run))
	for i, arg := range node.Run {
		s, err := graph.RenderPrompt(arg, graph.PromptData{Input: input, Visit: visit, Workspace: ws})
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("argument %d of its run: %s", i, graph.TemplateReason(err)), ErrTypeBadRequest, nil)
		}
		argv[i] = s
	}
	if graph.ClimbsOut(argv[0]) {
		err := fmt.Errorf("%w: tool node %q: its program %q climbs with \"..\", which the kernel resolves after the links before it (a link in the workspace leads anywhere) rather than as the text reads; name the program by a path without \"..\"", agent.ErrPathRefused, node.ID, argv[0])
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypePathRefused, err)
	}
	timeout := time.Duration(node.Timeout)
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	// The tool runs like an agent CLI: in a process group of its own that
	// dies with the worker and is killed whole on timeout, with the same
	// minimal environment plus the names its node and the worker's pass
	// list (TETHER_PASS_ENV) pass: never the worker's secrets by default.
	// Confined, it sees the run's working directory, a home and temp
	// directory of its own, and the caches its environment names.
	stdout, stderr := cliexec.NewTailBuffer(tailBytes), cliexec.NewTailBuffer(tailBytes)
	spec := cliexec.Spec{
		Backend: fmt.Sprintf("tool node %q", node.ID),
		Bin:     argv[0],
		Args:    argv[1:],
		Dir:     dir,
		Env:     cliexec.Environ(append(slices.Clone(a.PassEnv), node.Env...), retryEnv(lost)...),
		Timeout: timeout,
		Stdout:  stdout,
		Stderr:  stderr,
		Sandbox: a.Sandbox,
	}
	if a.Sandbox != nil {
		scratch, err := os.MkdirTemp("", "tether-tool-*")
		if err != nil {
			return nil, fmt.Errorf("tool node %q: scratch directory: %w", node.ID, err)
		}
		defer os.RemoveAll(scratch)
		spec.Home, spec.TempDir = filepath.Join(scratch, "home"), filepath.Join(scratch, "tmp")
		for _, d := range []string{spec.Home, spec.TempDir} {
			if err := os.Mkdir(d, 0o700); err != nil {
				return nil, fmt.Errorf("tool node %q: scratch directory: %w", node.ID, err)
			}
		}
	}
	// As an agent's CLI: a stopping worker lets the tool finish within its
	// grace, then ends it and hands the visit back.
	runCtx, stopping := a.untilWorkerStops(ctx)
	stop := a.heartbeat(ctx)
	// Its heartbeats say what runs and for how long: `tether status`
	// shows it, and an attempt after a lost one reads it back.
	if key := progressKey(ctx); key != "" {
		visitProgress.begin(key, agent.Progress{Node: node.ID, Visit: visit, Backend: "tool", Activity: cliexec.Activity(argv[0], strings.Join(argv[1:], " "))})
	}
	started := time.Now()
	_, err := cliexec.Run(runCtx, spec)
	stop()
	if handedBack := stopping(); err != nil && handedBack {
		return nil, temporal.NewApplicationError(fmt.Sprintf("worker %s stopped during the visit of tool node %q: %v", a.Queue, node.ID, err), ErrTypeWorkerStopping, err)
	}

	out := runapi.ToolOutput{Stdout: text(stdout), Stderr: text(stderr), DurationMS: int(time.Since(started).Milliseconds())}
	var exit *agent.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, agent.ErrTimeout):
		out.ExitCode, out.TimedOut = -1, true
	case errors.As(err, &exit):
		out.ExitCode = exit.Code
	case errors.Is(err, agent.ErrPathRefused):
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool node %q: the worker's sandbox will not run %q: %v", node.ID, argv[0], err), ErrTypePathRefused, err)
	case errors.Is(err, agent.ErrNotInstalled):
		// Not the agent CLIs' advice (scripts/tools.sh clis): a tool's
		// program is the graph's, and every worker needs it.
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tool node %q: cannot run %q on worker %s: it is not on the worker's PATH, or not executable; install it on every worker (or name it by absolute path in the node's run), then `tether resume` the run", node.ID, argv[0], a.Queue), ErrTypeBadRequest, nil)
	default:
		return nil, err
	}
	return out.Map(), nil
}

// text is a tail as an output keeps it: its bytes, a broken UTF-8 sequence
// at its start shown as "?".
func text(t *cliexec.TailBuffer) string { return string(bytes.ToValidUTF8(t.Bytes(), []byte("?"))) }

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

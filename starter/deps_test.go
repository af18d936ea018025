package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxDeps bounds the packages `tether` links, the standard library
// included (it linked 930 while it still reached the worker's code). What
// remains is what the CLI itself needs: the Temporal client (about 420
// packages on its own), the S3 client of the run store, go-git for the
// workspace's import and export, OpenTelemetry for its traces. Small
// leaves split out of what it linked anyway (the host:port patterns, the
// text cuts, the transcript readers apart from the facts, the health
// check, the run list, the version stamp) each count one.
const maxDeps = 910

// `tether` talks to Temporal with names and values only (internal/runapi):
// it must not link the workflow, the activities, any executor, the MCP
// server, the sandbox or the packer, which belong to the worker.
func TestTetherDoesNotLinkTheWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/tether-run/tether/starter").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	for _, d := range deps {
		if why := workerOnly(d); why != "" {
			t.Errorf("tether links %s (%s); reach it through internal/runapi or move the code the CLI needs out of it", d, why)
		}
	}
	require.LessOrEqual(t, len(deps), maxDeps, "tether links %d packages; see which new import brought the rest in with `go list -deps ./starter`", len(deps))
}

// workerOnly says why a package must stay out of `tether` ("" when it may
// be linked).
func workerOnly(pkg string) string {
	const mod = "github.com/tether-run/tether/"
	rel, ours := strings.CutPrefix(pkg, mod)
	switch {
	case strings.HasPrefix(pkg, "github.com/modelcontextprotocol/go-sdk"):
		return "the MCP SDK serves ask_user on the worker"
	case strings.HasPrefix(pkg, "github.com/landlock-lsm/"):
		return "Landlock confines the worker's processes"
	case !ours:
		return ""
	case rel == "workflows" || strings.HasPrefix(rel, "workflows/"):
		return "the workflow runs on the worker"
	case rel == "activities" || strings.HasPrefix(rel, "activities/"):
		return "the activities run on the worker"
	case rel == "internal/sandbox" || (strings.HasPrefix(rel, "internal/sandbox/") && rel != "internal/sandbox/mode"):
		return "the sandbox confines the worker's processes"
	case rel == "internal/packer":
		return "the packer packs sessions on the worker"
	case rel == "internal/backend" || strings.HasPrefix(rel, "internal/backend/"):
		// A backend's facts and its session readers (transcripts) are
		// the CLI's too; its executor, cliexec and the registry are not.
		parts := strings.Split(rel, "/")
		if len(parts) == 4 && (parts[3] == "facts" || parts[3] == "session") {
			return ""
		}
		return "executors and their registry run on the worker"
	}
	return ""
}

// The rule above would catch what it is meant to: the worker's own
// packages are refused, the CLI's kept.
func TestWorkerOnlyNamesTheWorkersPackages(t *testing.T) {
	for _, pkg := range []string{
		"github.com/tether-run/tether/workflows",
		"github.com/tether-run/tether/activities",
		"github.com/tether-run/tether/internal/backend",
		"github.com/tether-run/tether/internal/backend/cliexec",
		"github.com/tether-run/tether/internal/backend/claude",
		"github.com/tether-run/tether/internal/sandbox",
		"github.com/tether-run/tether/internal/packer",
		"github.com/modelcontextprotocol/go-sdk/mcp",
	} {
		require.NotEmpty(t, workerOnly(pkg), pkg)
	}
	for _, pkg := range []string{
		"github.com/tether-run/tether/internal/runapi",
		"github.com/tether-run/tether/internal/backend/claude/facts",
		"github.com/tether-run/tether/internal/backend/codex/session",
		"github.com/tether-run/tether/internal/sandbox/mode",
		"github.com/tether-run/tether/internal/transcript",
		"go.temporal.io/sdk/client",
	} {
		require.Empty(t, workerOnly(pkg), pkg)
	}
}

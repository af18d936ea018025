package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/internal/workerhost"
)

// What the parent hands the worker process it starts for the isolation
// test. The canaries are in that process's initial environment, as a real
// worker's secrets are.
const (
	isoTemporal = "TETHER_ISO_TEMPORAL"
	isoCLIBin   = "TETHER_ISO_CLI_BIN"
	isoAskUser  = "TETHER_ISO_ASK_USER"
	isoCanary   = "TETHER_ISO_CANARY"
	// isoSandbox=off runs the worker as Tether did before confinement
	// (no sandbox, a dumpable worker): the test must then fail.
	isoSandbox = "TETHER_ISO_SANDBOX"
	isoChild   = "TestAgentIsolationWorker"
)

// TestAgentIsolation is issue 21 item 8's proof: an agent must not read
// what its worker holds. A worker process holds a canary, S3 credentials
// and TETHER_BLOB_KEY in its environment, secrets in its HOME, and on its
// disk another run's working directory and session root. A real CLI visit
// of Claude Code, Codex and pi, with `permissions: full`, runs through its
// own shell tool: a grep of every /proc/*/environ for the secrets, reads of
// the other run's files, listings of the worker's run and state
// directories, and a read of the worker's HOME; a tool node tries the same.
// None of the secrets or hidden names reaches the model (every request the
// fake model got is searched) or the run's outputs, while the commands did
// run and the visit's own directory works. It runs with the worker as root
// and as uid 65534.
func TestAgentIsolation(t *testing.T) {
	if sandbox.ABI() < 1 {
		testenv.Unavailable(t, "this kernel has no Landlock")
	}
	srv := testenv.DevServer(t)
	bin := clitest.Isolate(t)
	ask := clitest.AskUserCommand(t)[0]
	// uid 65534 runs the ask_user server too.
	require.NoError(t, os.Chmod(ask, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(ask), 0o755))
	env := []string{
		isoTemporal + "=" + srv.Address, isoCLIBin + "=" + bin, isoAskUser + "=" + ask,
		isoCanary + "=iso-canary-" + token(),
		"AWS_ACCESS_KEY_ID=iso-akid-" + token(),
		"AWS_SECRET_ACCESS_KEY=iso-s3secret-" + token(),
		blob.KeyEnv + "=iso-blobkey-" + token(),
	}
	if v := os.Getenv(isoSandbox); v != "" {
		env = append(env, isoSandbox+"="+v)
	}
	runWorkerChild(t, isoChild, env)
}

// TestAgentIsolationWorker is the worker half of TestAgentIsolation, in a
// process of its own started with the secrets in its environment.
func TestAgentIsolationWorker(t *testing.T) {
	addr := os.Getenv(isoTemporal)
	if addr == "" {
		t.Skip("run by TestAgentIsolation")
	}
	canary := os.Getenv(isoCanary)
	environ, err := os.ReadFile("/proc/self/environ")
	require.NoError(t, err)
	require.Contains(t, string(environ), canary, "the secret is in the worker's initial environment")
	secrets := []string{canary, os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv(blob.KeyEnv)}

	var sb *sandbox.Sandbox
	if os.Getenv(isoSandbox) != sandbox.ModeOff {
		// What tether-worker does at start.
		require.NoError(t, sandbox.HideEnviron())
		sb = sandboxtest.New(t)
		require.Equal(t, sandbox.LevelFull, sb.Level)
		t.Logf("uid %d: %s", os.Getuid(), sb)
	}

	// The worker's disk: its HOME, another run's directories.
	base := t.TempDir()
	home := filepath.Join(base, "worker-home")
	homeSecret := "iso-home-secret-" + token()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".aws"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".aws", "credentials"), []byte(homeSecret+"\n"), 0o600))
	t.Setenv("HOME", home)
	stateDir, workDir := filepath.Join(base, "state"), filepath.Join(base, "work")
	other := "other-run-" + token()
	otherSecret := "iso-other-run-secret-" + token()
	hidden := "hidden-run-" + token() // named in no prompt: only a listing shows it
	for _, d := range []string{filepath.Join(workDir, other), filepath.Join(workDir, hidden), filepath.Join(stateDir, "runs", hidden, "claude_code")} {
		require.NoError(t, os.MkdirAll(d, 0o700))
	}
	require.NoError(t, os.WriteFile(filepath.Join(workDir, other, "secret.txt"), []byte(otherSecret+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(stateDir, "runs", hidden, "claude_code", "session.jsonl"), []byte(otherSecret+"\n"), 0o600))
	secrets = append(secrets, homeSecret, otherSecret, hidden)

	fake := fakemodel.Start(t)
	c, blobs := childWorker{ID: "iso", Addr: addr, Base: base, StateDir: stateDir, WorkDir: workDir, Sandbox: sb,
		Backends: backend.Config{CLIBin: os.Getenv(isoCLIBin), AskUser: []string{os.Getenv(isoAskUser)}},
	}.start(t, fake)

	tries := []string{
		`grep -a -h -o -E '(` + isoCanary + `|AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY|` + blob.KeyEnv + `)=[A-Za-z0-9-]+' /proc/[0-9]*/environ; echo environ-tried`,
		`cat ` + filepath.Join(workDir, other, "secret.txt") + `; echo other-run-tried`,
		`ls -a ` + workDir + ` ` + filepath.Join(stateDir, "runs") + `; echo listing-tried`,
		`cat ` + filepath.Join(home, ".aws", "credentials") + `; ls -a ` + home + `; echo home-tried`,
		`ls /proc | grep -c '^[0-9]' | sed 's/^/processes=/'; echo own-ok > own.txt && cat own.txt`,
	}
	// Codex's own workspace-write sandbox nests inside the box: its file
	// edits still work, and it reads no more than the box allows.
	for _, v := range []struct{ backend, permissions string }{
		{"claude_code", "full"}, {"codex", "full"}, {"pi", "full"}, {"gemini", "full"},
		{"codex", "edit"}, {"codex", "read-only"},
	} {
		b := v.backend
		t.Run(b+"/"+v.permissions, func(t *testing.T) {
			fake.Reset()
			id := fmt.Sprintf("iso-%s-%s-%d-%s", strings.ReplaceAll(b, "_", "-"), v.permissions, os.Getuid(), token())
			run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: runapi.TaskQueue},
				runapi.WorkflowType, &runapi.GraphRunInput{RunID: id, Graph: isolationGraph(t, b, v.permissions, tries), Options: testRunOptions})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			var res runapi.GraphRunResult
			require.NoError(t, run.Get(ctx, &res))

			var seen strings.Builder
			for _, r := range fake.Requests() {
				seen.Write(r.Body)
				seen.WriteString("\n")
			}
			all := seen.String()
			for _, marker := range []string{"environ-tried", "other-run-tried", "listing-tried", "home-tried", "own-ok"} {
				assert.Contains(t, all, marker, "the agent ran every command and its output reached the model")
			}
			edited, err := os.ReadFile(filepath.Join(workDir, id, "edited.txt"))
			if v.permissions == "read-only" {
				assert.Error(t, err, "a read-only agent wrote its workspace")
			} else if assert.NoError(t, err, "the agent's own file tool writes its workspace") {
				assert.Equal(t, "edited-ok\n", string(edited))
			}
			if t.Failed() {
				for _, r := range fake.Turns() {
					t.Logf("reply %s; tool result: %.600s", r.Reply, r.ToolResult)
				}
			}
			cp, err := runstore.New(blobs).Latest(context.Background(), id)
			require.NoError(t, err)
			outputs := fmt.Sprint(cp.Outputs, res.Output)
			assert.Contains(t, outputs, "environ-tried", "the tool node ran too")
			for _, s := range secrets {
				if i := strings.Index(all, s); i >= 0 {
					t.Errorf("the model saw what the worker holds: %q in …%s…", s, around(all, i, len(s)))
				}
				if i := strings.Index(outputs, s); i >= 0 {
					t.Errorf("the run's outputs hold what the worker holds: %q in …%s…", s, around(outputs, i, len(s)))
				}
			}
		})
	}
}

// isolationGraph is a tool node and then an agent of backend b, with
// permissions, each trying every command of tries; the agent first writes
// a file of its workspace with its own file tool and reads it back.
func isolationGraph(t *testing.T, b, permissions string, tries []string) *graph.Graph {
	t.Helper()
	var prompt, script strings.Builder
	prompt.WriteString("look around\n      WRITE_FILE: edited.txt\n      edited-ok\n      END_FILE\n")
	fmt.Fprintf(&prompt, "      %s cat edited.txt\n", fakemodel.CueShell)
	for _, c := range tries {
		fmt.Fprintf(&prompt, "      %s %s\n", fakemodel.CueShell, c)
		script.WriteString(c + "\n")
	}
	src := fmt.Sprintf(`
name: isolation
start: probe
nodes:
  - id: probe
    kind: tool
    run: ["/bin/sh", "-c", %q]
  - id: agent
    kind: agent
    backend: %s
    permissions: %s
    prompt: |
      %s
  - {id: done, kind: end}
edges:
  - {from: probe, to: agent}
  - {from: agent, to: done}
`, script.String(), b, permissions, strings.TrimSpace(prompt.String()))
	return parseGraph(t, src, "isolation.yaml")
}

// around is s near [i, i+n), for a failure message.
func around(s string, i, n int) string {
	return s[max(0, i-80):min(len(s), i+n+40)]
}

func token() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runWorkerChild runs the test named child, the worker half of a
// confinement test, in a process of its own with env added to its
// environment: as root (when the test runs as root) and as uid 65534, a
// subtest each, and requires it to pass. args go to the test binary run as
// root.
func runWorkerChild(t *testing.T, child string, env []string, args ...string) {
	t.Run("root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("the test does not run as root here")
		}
		self, err := os.Executable()
		require.NoError(t, err)
		argv := append([]string{"-test.run=^" + child + "$", "-test.v", "-test.count=1"}, args...)
		cmd := exec.CommandContext(t.Context(), self, argv...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "worker as root:\n%s", out)
		require.Contains(t, string(out), "--- PASS: "+child, "%s", out)
		t.Logf("worker as root:\n%s", out)
	})
	t.Run("nobody", func(t *testing.T) {
		out, err := testenv.RunAsNobody(t, child, env...)
		if err != nil {
			testenv.Unavailable(t, "cannot run the worker as uid %d: %v", testenv.Nobody, err)
		}
		require.Contains(t, string(out), "--- PASS: "+child, "%s", out)
	})
}

// childWorker is what the worker half of a confinement test runs, as
// tether-worker does: a client of the dev server, a file store and a temp
// dir under Base, the real CLIs' backends talking to the fake model, and a
// worker host, all confined by Sandbox (nil: unconfined).
type childWorker struct {
	ID                string // the worker's id, made unique per process
	Addr              string // the dev server's frontend
	Base              string
	StateDir, WorkDir string
	// Backends names CLIBin, AskUser and what else the test sets; its Vars,
	// TempDir and Sandbox are filled in.
	Backends backend.Config
	Sandbox  *sandbox.Sandbox
}

// start starts the worker, stopped at the end of the test, and returns its
// client and blob store.
func (o childWorker) start(t *testing.T, fake *fakemodel.Server) (client.Client, blob.Store) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: o.Addr, Namespace: "default"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	blobs, err := blob.Open(context.Background(), "file://"+filepath.Join(o.Base, "store"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = blobs.Close() })
	require.NoError(t, os.MkdirAll(filepath.Join(o.Base, "tmp"), 0o700))
	cfg := o.Backends
	cfg.Vars, cfg.TempDir, cfg.Sandbox = clitest.FakeVars(fake), filepath.Join(o.Base, "tmp"), o.Sandbox
	bs, err := backend.New(cfg)
	require.NoError(t, err)
	w, err := workerhost.Start(c, workerhost.Options{
		ID: fmt.Sprintf("%s-%d-%d", o.ID, os.Getuid(), time.Now().UnixNano()), Blobs: blobs, Backends: bs,
		StateDir: o.StateDir, WorkDir: o.WorkDir, Sandbox: o.Sandbox, Logger: testLogger(),
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return c, blobs
}
